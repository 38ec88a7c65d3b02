"""`RunFolder`: every file of a run folder (docs/run-record.md) named once, each read and
written with its one model.

A record folder (what `repro bench` or `repro accept` writes) holds run.json, recipe.json,
summary.json and the rest; a `repro run` folder holds stages.json, context.json and
machine.json with the records as its bench/ and accept/ parts and the report under report/.
`RunFolder(path)` is either: its `*_file` properties name the files, `read_*` return the
file's model (None for an optional file the run did not write), `write_*` take that model and
write it atomically as strict JSON. `RunFolder(path, shown=True)` reads for showing (reports,
`repro runs`): every string cleaned by `repro.safetext`, so a server's or an editor's text
never carries escape sequences or megabytes to a terminal or a page.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from repro.fsutil import write_atomic
from repro.runfolder.jsonio import (
    NOT_A_RUN,
    RunRecordError,
    json_lines,
    read_json,
    read_text,
    validated,
    write_model,
)
from repro.safetext import clean_lines, clean_strings
from repro.schema.accept import AcceptResults
from repro.schema.accuracy import AccuracyResults
from repro.schema.level import Load, RequestRow, Summary, as_load
from repro.schema.lock import Lock
from repro.schema.machine import MachineInfo
from repro.schema.record import (
    AcceptRunInfo,
    AnyRunInfo,
    BenchRunInfo,
    RunInfo,
    StagesFile,
)
from repro.schema.recordedrecipe import RecordedRecipe
from repro.schema.runcontext import RunContextFile
from repro.schema.server import MetricsSample
from repro.schema.serverinfo import ServerInfo
from repro.schema.validation import first_problem

M = TypeVar("M", bound=BaseModel)

RUN = "run.json"
RECIPE = "recipe.json"
LOCK = "lock.json"
SUMMARY = "summary.json"
MACHINE = "machine.json"
SERVER_INFO = "server_info.json"
ACCEPT = "accept.json"
ACCURACY = "accuracy.json"
LEVELS = "levels"
STAGES = "stages.json"
CONTEXT = "context.json"
SERVER_LOG = "server.log"
COMPOSE_OVERRIDE = "compose.override.yaml"
BENCH_PART = "bench"
ACCEPT_PART = "accept"
REPORT = "report"
REPORT_MARKDOWN = "report.md"
REPORT_HTML = "report.html"
SIM_RECIPES = "recipes"
SIM_IMAGES = "images"
SIM_PATCHES = "patches"
PARTS = (BENCH_PART, ACCEPT_PART)  # the record folders inside a `repro run` folder

_RUN_INFO: TypeAdapter[AnyRunInfo] = TypeAdapter(AnyRunInfo)


def _level_name(load: Load | int, repeat: int) -> str:
    """`<load>-r<repeat>` (`c4-r0`, `rate4-r0`, `trace1x-r0`): how a level's files are named;
    a bare int is a closed-loop concurrency."""
    return f"{as_load(load).stem}-r{repeat}"


class RunFolder:
    """One run folder on disk: a record folder, or a `repro run` folder with record parts."""

    def __init__(self, path: str | Path, *, shown: bool = False):
        self.path = Path(path)
        self.shown = shown

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RunFolder) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)

    @property
    def name(self) -> str:
        return self.path.name

    # ---- the files ------------------------------------------------------------------------
    @property
    def run_file(self) -> Path:
        return self.path / RUN

    @property
    def recipe_file(self) -> Path:
        return self.path / RECIPE

    @property
    def lock_file(self) -> Path:
        return self.path / LOCK

    @property
    def summary_file(self) -> Path:
        return self.path / SUMMARY

    @property
    def machine_file(self) -> Path:
        return self.path / MACHINE

    @property
    def server_info_file(self) -> Path:
        return self.path / SERVER_INFO

    @property
    def accept_file(self) -> Path:
        return self.path / ACCEPT

    @property
    def accuracy_file(self) -> Path:
        """The answers `repro accept --accuracy` scored, beside accept.json."""
        return self.path / ACCURACY

    @property
    def levels_dir(self) -> Path:
        return self.path / LEVELS

    def requests_file(self, load: Load | int, repeat: int) -> Path:
        """`levels/<load>-r<r>.jsonl`: one `RequestRow` per line."""
        return self.levels_dir / f"{_level_name(load, repeat)}.jsonl"

    def metrics_file(self, load: Load | int, repeat: int) -> Path:
        """`levels/<load>-r<r>.metrics.jsonl`: the level's `/metrics` scrapes."""
        return self.levels_dir / f"{_level_name(load, repeat)}.metrics.jsonl"

    @property
    def stages_file(self) -> Path:
        return self.path / STAGES

    @property
    def context_file(self) -> Path:
        return self.path / CONTEXT

    @property
    def server_log_file(self) -> Path:
        return self.path / SERVER_LOG

    @property
    def compose_override_file(self) -> Path:
        """What `repro run --dry-run` shows as the run's Compose override."""
        return self.path / COMPOSE_OVERRIDE

    @property
    def report_dir(self) -> Path:
        return self.path / REPORT

    @property
    def report_markdown_file(self) -> Path:
        return self.report_dir / REPORT_MARKDOWN

    @property
    def report_html_file(self) -> Path:
        return self.report_dir / REPORT_HTML

    @property
    def sim_recipes_dir(self) -> Path:
        """A `--sim` run's simulated twin of the recipe lives here."""
        return self.path / SIM_RECIPES

    @property
    def sim_images_dir(self) -> Path:
        """A `--sim` run's link to the image specs its twin is checked against (or, for a
        recipe whose image has a patch set, the folder of the simulator image standing in
        for it)."""
        return self.path / SIM_IMAGES

    @property
    def sim_patches_dir(self) -> Path:
        """The patch sets of a `--sim` run's stand-in simulator image."""
        return self.path / SIM_PATCHES

    # ---- parts of a `repro run` folder ----------------------------------------------------
    @property
    def bench(self) -> RunFolder:
        return RunFolder(self.path / BENCH_PART, shown=self.shown)

    @property
    def accept(self) -> RunFolder:
        return RunFolder(self.path / ACCEPT_PART, shown=self.shown)

    def has_run(self) -> bool:
        """Whether this is a record folder (it has run.json)."""
        return self.run_file.is_file()

    def has_context(self) -> bool:
        """Whether `repro run` saved its context here (what `--resume` needs)."""
        return self.context_file.is_file()

    def is_pipeline(self) -> bool:
        """Whether this is a `repro run` folder (it has stages.json)."""
        return self.stages_file.is_file()

    def record_part(self) -> RunFolder | None:
        """The record this folder holds: itself, or for a `repro run` folder its bench/ part
        (accept/ when the run has no bench yet); None when it holds none."""
        for folder in (self, self.bench, self.accept):
            if folder.has_run():
                return folder
        return None

    def owner(self) -> RunFolder | None:
        """The folder this record is a part of, by its name (bench/ or accept/); None for a
        record on its own."""
        return RunFolder(self.path.parent, shown=self.shown) if self.name in PARTS else None

    def pipeline(self) -> RunFolder | None:
        """The `repro run` folder this record is a part of (it has stages.json)."""
        owner = self.owner()
        return owner if owner is not None and owner.is_pipeline() else None

    # ---- reading --------------------------------------------------------------------------
    def read_run(self) -> BenchRunInfo | AcceptRunInfo:
        """run.json, as the kind it names (bench when it names none)."""
        return validated(_RUN_INFO.validate_python, self._json(self.run_file), self.run_file)

    def read_summary(self) -> Summary:
        path = self.summary_file
        data = self._json(path)
        if not isinstance(data, dict) or not isinstance(data.get("levels"), list):
            raise RunRecordError(f'{path}: expected {{"levels": [...]}}')
        _check_measurable(data, path)
        return validated(Summary.model_validate, data, path)

    def read_recipe(self) -> RecordedRecipe:
        path = self.recipe_file
        data = self._json(path)
        if not isinstance(data, dict):
            raise RunRecordError(f"{path}: expected a JSON object (the recipe)")
        return validated(RecordedRecipe.model_validate, data, path)

    def read_lock(self) -> Lock | None:
        return self._optional(Lock, self.lock_file)

    def read_machine(self) -> MachineInfo | None:
        return self._optional(MachineInfo, self.machine_file)

    def read_server_info(self) -> ServerInfo | None:
        return self._optional(ServerInfo, self.server_info_file)

    def read_accept(self) -> AcceptResults | None:
        return self._optional(AcceptResults, self.accept_file)

    def read_accuracy(self) -> AccuracyResults | None:
        return self._optional(AccuracyResults, self.accuracy_file)

    def read_stages(self) -> StagesFile | None:
        """stages.json; None before the run's first stage ended."""
        path, hint = self.stages_file, "is this a `repro run` folder?"
        data = self._json(path, hint, required=False)
        return None if data is None else validated(StagesFile.model_validate, data, path, hint)

    def read_context(self) -> RunContextFile:
        """context.json, checked: a folder that is no run, or a file that was truncated or
        edited, is one clear error naming it."""
        path = self.context_file
        hint = f"is {self.path} a `repro run` folder? start a new run with `repro run RECIPE`"
        if not path.is_file():
            raise RunRecordError(
                f"{self.path} is not a `repro run` folder: it has no {CONTEXT}", hint=hint
            )
        try:
            return RunContextFile.model_validate(self._json(path, hint))
        except ValidationError as err:
            raise RunRecordError(
                f"{path}: not a run context: {first_problem(err)}", hint=hint
            ) from None

    def read_requests(self, load: Load | int, repeat: int) -> list[RequestRow]:
        """The per-request rows of one level."""
        path = self.requests_file(load, repeat)
        rows: list[RequestRow] = []
        for number, line in enumerate(read_text(path).splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append(RequestRow.model_validate_json(line))
            except ValidationError as err:
                raise RunRecordError(
                    f"{path}:{number}: not a request row: {first_problem(err)}",
                    hint="the file is corrupt; re-run the level with `repro bench --resume`",
                ) from None
        return rows

    def _json(self, path: Path, hint: str = NOT_A_RUN, *, required: bool = True) -> Any:
        """A file's JSON (None for a missing file that is not `required`), cleaned when shown."""
        data = read_json(path, hint, required=required)
        return clean_strings(data) if self.shown else data

    def _optional(self, model: type[M], path: Path) -> M | None:
        """An optional file of the record, validated; None when the run did not write it."""
        data = self._json(path, required=False)
        return None if data is None else validated(model.model_validate, data, path)

    # ---- writing --------------------------------------------------------------------------
    def write_run(self, run: RunInfo) -> None:
        write_model(self.run_file, run)

    def write_recipe(self, recipe: RecordedRecipe) -> None:
        write_model(self.recipe_file, recipe, exclude_unset=True)

    def write_lock(self, lock: Lock) -> None:
        write_model(self.lock_file, lock)

    def write_summary(self, summary: Summary, *, exclude_unset: bool = False) -> None:
        write_model(self.summary_file, summary, exclude_unset=exclude_unset)

    def write_machine(self, machine: MachineInfo) -> None:
        write_model(self.machine_file, machine, exclude_unset=True)

    def write_server_info(self, info: ServerInfo) -> None:
        write_model(self.server_info_file, info, exclude_unset=True)

    def write_accept(self, results: AcceptResults) -> None:
        write_model(self.accept_file, results)

    def write_accuracy(self, results: AccuracyResults) -> None:
        write_model(self.accuracy_file, results)

    def write_stages(self, stages: StagesFile) -> None:
        write_model(self.stages_file, stages)

    def write_context(self, context: RunContextFile) -> None:
        write_model(self.context_file, context)

    def write_level_rows(
        self,
        load: Load | int,
        repeat: int,
        rows: Iterable[RequestRow],
        series: Sequence[MetricsSample] = (),
    ) -> None:
        """A level's metrics series, then its requests (the summary comes last: a level is
        finished once its JSONL and summary exist)."""
        metrics = self.metrics_file(load, repeat)
        if series:
            write_atomic(metrics, json_lines(series))
        else:
            metrics.unlink(missing_ok=True)  # a re-run level drops the old one's series
        write_atomic(self.requests_file(load, repeat), json_lines(rows))

    def write_server_log(self, lines: Sequence[str]) -> None:
        """A server's last log lines as server.log (nothing when empty)."""
        if lines:
            write_atomic(self.server_log_file, clean_lines("\n".join(lines)) + "\n")


def record_folder(path: str | Path, *, shown: bool = False) -> RunFolder:
    """The record that `path` names: a record folder (or its run.json), or a `repro run`
    folder's bench/ part (accept/ when the run has no bench yet)."""
    folder = RunFolder(path, shown=shown)
    if folder.name == RUN:
        folder = RunFolder(folder.path.parent, shown=shown)
    if not folder.path.is_dir():
        raise RunRecordError(f"{folder.path}: no such run record folder", hint=NOT_A_RUN)
    return folder.record_part() or folder


MAX_MEASUREMENT = 1e15  # above any rate, latency, count or energy a run can measure


def _check_measurable(data: Any, path: Path) -> None:
    """Refuse a number no run measures (infinite, or beyond ±MAX_MEASUREMENT, as 1e308
    written by hand): a plot's axis or a sum would overflow on it."""
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, dict):
            stack += [(v, f"{where}.{k}" if where else str(k)) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(v, f"{where}[{i}]") for i, v in enumerate(value)]
        elif _impossible(value):
            raise RunRecordError(
                f"{path}: {where}: {value:g} is not a measurement (expected a finite "
                f"number within ±{MAX_MEASUREMENT:g})",
                hint="the file was edited or corrupted; restore it or re-run the level "
                "with `repro bench --resume`",
            )


def _impossible(value: Any) -> bool:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    return not math.isfinite(value) or abs(value) > MAX_MEASUREMENT
