"""`repro runs`: the run folders under runs/, each with its recipe, machine and status.

Reads only the small files of each folder (stages.json, bench/run.json, server_info.json,
machine.json), so listing hundreds of runs stays quick; a folder it cannot read is listed with
why, never skipped silently.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from repro.runfolder import RunRecordError, read_json
from repro.safetext import clean_strings
from repro.schema.machine import MachineInfo, ServerInfo, hardware_label, simulator_label
from repro.schema.record import StagesFile
from repro.schema.runcontext import CONTEXT_FILE, RunContextFile


@dataclass
class RunListing:
    folder: str
    recipe: str
    machine: str
    status: str
    started: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _json(path: Path) -> Any:
    """A run file's JSON, its strings cleaned for the terminal (`repro.safetext`); None when
    it is missing or unreadable (the listing goes on)."""
    try:
        return clean_strings(read_json(path))
    except RunRecordError:
        return None


def _record_part(folder: Path) -> Path | None:
    for part in (folder, folder / "bench", folder / "accept"):
        if (part / "run.json").is_file():
            return part
    return None


def _status(folder: Path, run: dict[str, Any]) -> str:
    """A `repro run` folder: done, `failed at <stage>`, `interrupted at <stage>` or
    `incomplete, next <stage>`; a bench or accept folder: its run.json status."""
    data = _json(folder / "stages.json")
    if data is None:  # a bench or accept record: `complete` reads as a run's `done`
        status = str(run.get("status", "?"))
        return "done" if status == "complete" else status
    try:
        stages = StagesFile.model_validate(data).stages
    except ValidationError:
        return "unreadable stages.json"
    failed = next((s for s in stages if s.status == "failed"), None)
    if failed is not None:  # Ctrl-C or SIGTERM is not the stage's failure
        cut = "interrupted" if failed.summary.startswith("interrupted") else "failed"
        return f"{cut} at {failed.name}"
    pending = next((s.name for s in stages if s.status == "pending"), None)
    return f"incomplete, next {pending}" if pending else "done"


def _machine(part: Path) -> str:
    server, machine = _json(part / "server_info.json"), _json(part / "machine.json")
    try:
        sim = simulator_label(ServerInfo.model_validate(server)) if server else None
        return sim or hardware_label(MachineInfo.model_validate(machine) if machine else None)
    except ValidationError:
        return "unreadable"


def _context_ref(folder: Path) -> str:
    """The recipe a `repro run` folder runs, from its context.json; `?` when unreadable."""
    try:
        return RunContextFile.model_validate(_json(folder / CONTEXT_FILE)).ref
    except ValidationError:
        return "?"


def list_runs(runs_dir: Path) -> list[RunListing]:
    """Every run folder directly under `runs_dir`, oldest first."""
    if not runs_dir.is_dir():
        return []
    out: list[RunListing] = []
    for folder in sorted(p for p in runs_dir.iterdir() if p.is_dir()):
        part = _record_part(folder)
        if part is None and not (folder / "stages.json").is_file():
            continue
        run = (_json(part / "run.json") if part else None) or {}
        recipe = run.get("recipe_name") or Path(_context_ref(folder)).stem
        out.append(
            RunListing(
                folder=str(folder),
                recipe=str(recipe),
                machine=_machine(part) if part else hardware_label(None),
                status=_status(folder, run),
                started=str(run.get("started_at") or "-"),
            )
        )
    return out
