"""`repro runs`: the run folders under runs/, each with its recipe, machine and status.

Reads only the small files of each folder (stages.json, bench/run.json, server_info.json,
machine.json), so listing hundreds of runs stays quick; a folder it cannot read is listed with
why, never skipped silently.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from repro.runfolder import RunFolder, RunRecordError
from repro.schema.machine import hardware_label
from repro.schema.record import RunInfo
from repro.schema.serverinfo import simulator_label

T = TypeVar("T")


@dataclass
class RunListing:
    folder: str
    recipe: str
    machine: str
    status: str
    started: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _or_none(read: Callable[[], T]) -> T | None:
    """A run file's model, None when it is missing or unreadable (the listing goes on)."""
    try:
        return read()
    except RunRecordError:
        return None


def _status(folder: RunFolder, run: RunInfo | None) -> str:
    """A `repro run` folder: done, `failed at <stage>`, `interrupted at <stage>` or
    `incomplete, next <stage>`; a bench or accept folder: its run.json status."""
    if not folder.is_pipeline():  # a bench or accept record: `complete` reads as a run's `done`
        status = run.status if run is not None else "?"
        return "done" if status == "complete" else status
    try:
        stages = folder.read_stages()
    except RunRecordError:
        return "unreadable stages.json"
    records = stages.stages if stages is not None else []
    failed = next((s for s in records if s.status == "failed"), None)
    if failed is not None:  # Ctrl-C or SIGTERM is not the stage's failure
        cut = "interrupted" if failed.summary.startswith("interrupted") else "failed"
        return f"{cut} at {failed.name}"
    pending = next((s.name for s in records if s.status == "pending"), None)
    return f"incomplete, next {pending}" if pending else "done"


def _machine(part: RunFolder) -> str:
    try:
        sim = simulator_label(part.read_server_info())
        return sim or hardware_label(part.read_machine())
    except RunRecordError:
        return "unreadable"


def _context_ref(folder: RunFolder) -> str:
    """The recipe a `repro run` folder runs, from its context.json; `?` when unreadable."""
    context = _or_none(folder.read_context)
    return context.ref if context is not None else "?"


def list_runs(runs_dir: Path) -> list[RunListing]:
    """Every run folder directly under `runs_dir`, oldest first."""
    if not runs_dir.is_dir():
        return []
    out: list[RunListing] = []
    for path in sorted(p for p in runs_dir.iterdir() if p.is_dir()):
        folder = RunFolder(path, shown=True)  # shown on a terminal: strings cleaned
        part = folder.record_part()
        if part is None and not folder.is_pipeline():
            continue
        run = _or_none(part.read_run) if part else None
        recipe = run.recipe_name if run else Path(_context_ref(folder)).stem
        out.append(
            RunListing(
                folder=str(path),
                recipe=recipe,
                machine=_machine(part) if part else hardware_label(None),
                status=_status(folder, run),
                started=(run.started_at if run else None) or "-",
            )
        )
    return out
