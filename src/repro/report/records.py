"""Run records (docs/run-record.md) loaded for reports, validated with repro.spec.record.

    run = load_run("runs/20250101T000000Z-kimi26-ep4")
    run.recipe_name, run.machine_class, run.image_digest_short, run.simulated
    run.points("output_throughput")        # {concurrency: Point(mean, values per repeat)}
                                           # from valid levels; include_invalid=True: all
    run.invalid_reasons()                  # {concurrency: reasons of its invalid levels}

A missing or corrupt file raises `RunRecordError` naming the file and what was wrong.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from repro.errors import ReproError
from repro.spec.lock import Lock
from repro.spec.record import (
    AcceptResults,
    AnyRunInfo,
    BenchWorkload,
    MachineInfo,
    RequestRow,
    RunRecord,
    ServerInfo,
    Summary,
    first_error,
)

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


class MetricInfo(BaseModel):
    """How one reportable metric is read from a summary level and judged."""

    name: str
    key: str  # key in a summary.json level
    label: str
    unit: str
    higher_is_better: bool


METRICS: dict[str, MetricInfo] = {
    "output_throughput": MetricInfo(
        name="output_throughput",
        key="output_throughput",
        label="output throughput",
        unit="tok/s",
        higher_is_better=True,
    ),
    "ttft": MetricInfo(
        name="ttft", key="mean_ttft_ms", label="mean TTFT", unit="ms", higher_is_better=False
    ),
    "itl": MetricInfo(
        name="itl",
        key="mean_itl_ms",
        label="mean ITL (per token)",
        unit="ms",
        higher_is_better=False,
    ),
    "tpot": MetricInfo(
        name="tpot", key="mean_tpot_ms", label="mean TPOT", unit="ms", higher_is_better=False
    ),
    "chunk_gap": MetricInfo(
        name="chunk_gap",
        key="mean_chunk_gap_ms",
        label="mean chunk gap",
        unit="ms",
        higher_is_better=False,
    ),
    "accept_length": MetricInfo(
        name="accept_length",
        key="accept_length",
        label="acceptance length",
        unit="tok/step",
        higher_is_better=True,
    ),
    # energy and cost (issue 21): None in levels without readings or a GPU-hour price
    "joules_per_token": MetricInfo(
        name="joules_per_token",
        key="joules_per_output_token",
        label="energy per output token",
        unit="J/tok",
        higher_is_better=False,
    ),
    "power": MetricInfo(
        name="power", key="mean_power_w", label="mean GPU power", unit="W", higher_is_better=False
    ),
    "usd_per_mtok": MetricInfo(
        name="usd_per_mtok",
        key="usd_per_mtok",
        label="cost per million output tokens",
        unit="$/Mtok",
        higher_is_better=False,
    ),
}


class RunRecordError(ReproError):
    """A run record folder or one of its files is missing or unreadable."""


class Point(BaseModel):
    """One metric at one concurrency: the repeats' values, their mean and range."""

    concurrency: int
    values: list[float]
    invalid: int = Field(default=0, description="how many of the values come from invalid levels")

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    @property
    def repeats(self) -> int:
        return len(self.values)


class LoadedRun(RunRecord):
    """A run record loaded for reports: the record, its row label and the metric helpers."""

    label: str = Field(default="", description="row label: recipe name, unique among loaded runs")

    @property
    def machine_class(self) -> str:
        """e.g. `8x RTX PRO 6000 Blackwell, pcie-cross-numa`; `no GPUs` on a CPU box."""
        if self.machine is None:
            return "unknown"
        gpus = self.machine.gpus
        if not gpus:
            return "no GPUs"
        names = sorted({g.name.removeprefix("NVIDIA ").strip() for g in gpus})
        return f"{len(gpus)}x {'+'.join(names)}, {self.machine.interconnect or 'unknown'}"

    @property
    def image_digest(self) -> str | None:
        """The image digest from the lock (registry digest, else content fingerprint), else what
        the server reported."""
        image = self.lock.image if self.lock is not None else None
        if image is not None:
            return image.digest or image.fingerprint
        reported = self.server_info.model_dump() if self.server_info else {}
        for key in ("digest", "image_digest", "repo_digest", "id", "fingerprint"):
            value = reported.get(key)
            if isinstance(value, str) and value:
                return value
        return None

    @property
    def image_digest_short(self) -> str:
        digest = self.image_digest
        if not digest:
            return "-"
        tail = digest.split("@", 1)[-1]
        algo, _, hexpart = tail.partition(":")
        return f"{algo}:{hexpart[:12]}" if hexpart else tail[:19]

    def workload_identity(self) -> dict[str, Any]:
        """What must agree for two runs' points to be comparable: the settings and, where both
        runs recorded it, the prompts' content (a Hub commit, a file's sha256)."""
        workload = self.run.workload
        if not isinstance(workload, BenchWorkload):  # an accept run: no bench settings
            workload = BenchWorkload()
        return {
            "input_len": workload.input_len,
            "output_len": workload.output_len,
            "dataset": workload.dataset,
            "request_rate": workload.request_rate,
            "prompts": _prompts_identity(workload.dataset_source),
        }

    def points(self, metric: str, include_invalid: bool = False) -> dict[int, Point]:
        """Per concurrency, the metric's value in each repeat (levels without it are left out;
        invalid levels too, unless `include_invalid`)."""
        key = METRICS[metric].key if metric in METRICS else metric
        out: dict[int, Point] = {}
        for level in sorted(self.levels, key=lambda lv: (lv.concurrency, lv.repeat)):
            value = level.value(key)
            if value is None or not (level.valid or include_invalid):
                continue
            point = out.setdefault(
                level.concurrency, Point(concurrency=level.concurrency, values=[])
            )
            point.values.append(value)
            point.invalid += not level.valid
        return out

    def invalid_reasons(self) -> dict[int, list[str]]:
        """Per concurrency with invalid levels, their reasons (each once, `r<repeat>: ...`
        when the concurrency was repeated)."""
        repeated = {lv.concurrency for lv in self.levels if lv.repeat > 0}
        out: dict[int, list[str]] = {}
        for level in sorted(self.levels, key=lambda lv: (lv.concurrency, lv.repeat)):
            if level.valid:
                continue
            tag = f"r{level.repeat}: " if level.concurrency in repeated else ""
            reasons = out.setdefault(level.concurrency, [])
            reasons += [tag + r for r in level.reasons or ["invalid"] if tag + r not in reasons]
        return out

    def requests(self, concurrency: int, repeat: int) -> list[RequestRow]:
        """The per-request rows of one level (`levels/c<c>-r<r>.jsonl`)."""
        path = self.path / "levels" / f"c{concurrency}-r{repeat}.jsonl"
        rows: list[RequestRow] = []
        for number, line in enumerate(_read_text(path).splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append(RequestRow.model_validate_json(line))
            except ValidationError as err:
                raise RunRecordError(
                    f"{path}:{number}: not a request row: {first_error(err)}",
                    hint="the file is corrupt; re-run the level with `repro bench --resume`",
                ) from None
        return rows


def _prompts_identity(source: dict[str, Any] | None) -> str | None:
    if not source:
        return None
    if source.get("kind") == "hub":
        files = ",".join(source.get("files") or [])
        return f"{source.get('repo')}@{source.get('commit')} {files} :{source.get('column')}"
    return f"{source.get('kind')} sha256:{source.get('sha256')} :{source.get('column', '')}"


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RunRecordError(
            f"{path}: missing",
            hint="is this a run record folder written by `repro bench`?",
        ) from None
    except OSError as err:
        raise RunRecordError(f"{path}: cannot read: {err.strerror or err}") from None


def _read_json(path: Path, required: bool = True) -> Any:
    if not required and not path.exists():
        return None
    text = _read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise RunRecordError(
            f"{path}: corrupt JSON at line {err.lineno} column {err.colno}: {err.msg}",
            hint="the run was interrupted mid-write or the file was edited; re-run or restore it",
        ) from None


def _validate(validate: Callable[[Any], T], data: Any, path: Path) -> T:
    """`validate(data)`, its errors naming the file and the field."""
    try:
        return validate(data)
    except ValidationError as err:
        raise RunRecordError(
            f"{path}: {first_error(err)}",
            hint="see docs/run-record.md for the expected fields",
        ) from None


_RUN_INFO: TypeAdapter[AnyRunInfo] = TypeAdapter(AnyRunInfo)


def load_run(path: str | Path) -> LoadedRun:
    """Load and validate one run record folder (or its `run.json`)."""
    folder = Path(path)
    if folder.name == "run.json":
        folder = folder.parent
    if not folder.is_dir():
        raise RunRecordError(
            f"{folder}: no such run record folder",
            hint="pass a folder under runs/ written by `repro bench`",
        )
    run = _validate(_RUN_INFO.validate_python, _read_json(folder / "run.json"), folder / "run.json")
    summary_path = folder / "summary.json"
    summary = _read_json(summary_path)
    if not isinstance(summary, dict) or not isinstance(summary.get("levels"), list):
        raise RunRecordError(f'{summary_path}: expected {{"levels": [...]}}')
    levels = _validate(Summary.model_validate, summary, summary_path).levels
    recipe = _read_json(folder / "recipe.json")
    if not isinstance(recipe, dict):
        raise RunRecordError(f"{folder / 'recipe.json'}: expected a JSON object (the recipe)")
    return LoadedRun(
        path=folder,
        run=run,
        recipe=recipe,
        lock=_optional(Lock, folder / "lock.json"),
        machine=_optional(MachineInfo, folder / "machine.json"),
        server_info=_optional(ServerInfo, folder / "server_info.json"),
        levels=levels,
        accept=_optional(AcceptResults, folder / "accept.json"),
        label=run.recipe_name,
    )


def _optional(model: type[M], path: Path) -> M | None:
    """An optional file of the record, validated; None when the run did not write it."""
    data = _read_json(path, required=False)
    return None if data is None else _validate(model.model_validate, data, path)


def load_runs(paths: list[str | Path] | tuple[str | Path, ...]) -> list[LoadedRun]:
    """Load several run records; labels are made unique (recipe name, then run id)."""
    runs = [load_run(p) for p in paths]
    names = [r.recipe_name for r in runs]
    for run in runs:
        if names.count(run.recipe_name) > 1:
            run.label = f"{run.recipe_name} ({run.run_id})"
    return runs
