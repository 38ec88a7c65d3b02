"""Run records (docs/run-record.md) loaded into typed models.

    run = load_run("runs/20250101T000000Z-kimi26-ep4")
    run.recipe_name, run.machine_class, run.image_digest_short, run.simulated
    run.points("output_throughput")        # {concurrency: Point(mean, values per repeat)}

A missing or corrupt file raises `RunRecordError` naming the file and what was wrong.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from repro.errors import ReproError

MetricName = Literal["output_throughput", "ttft", "itl", "accept_length"]


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
        name="itl", key="mean_itl_ms", label="mean ITL", unit="ms", higher_is_better=False
    ),
    "accept_length": MetricInfo(
        name="accept_length",
        key="accept_length",
        label="acceptance length",
        unit="tok/step",
        higher_is_better=True,
    ),
}


class RunRecordError(ReproError):
    """A run record folder or one of its files is missing or unreadable."""


class Workload(BaseModel):
    model_config = ConfigDict(extra="allow")

    input_len: int | None = None
    output_len: int | None = None
    dataset: str | None = None
    prompts_per_level: int | None = None
    warmup: int | None = None
    repeats: int | None = None
    request_rate: float | None = None
    dataset_source: dict[str, Any] | None = None  # docs/run-record.md: which prompts ran

    def identity(self) -> dict[str, Any]:
        """What must agree for two runs' points to be comparable: the settings and, where both
        runs recorded it, the prompts' content (a Hub commit, a file's sha256)."""
        return {
            "input_len": self.input_len,
            "output_len": self.output_len,
            "dataset": self.dataset,
            "request_rate": self.request_rate,
            "prompts": self.prompts_identity(),
        }

    def prompts_identity(self) -> str | None:
        src = self.dataset_source
        if not src:
            return None
        if src.get("kind") == "hub":
            files = ",".join(src.get("files") or [])
            return f"{src.get('repo')}@{src.get('commit')} {files} :{src.get('column')}"
        return f"{src.get('kind')} sha256:{src.get('sha256')} :{src.get('column', '')}"


class RunMeta(BaseModel):
    """`run.json`."""

    model_config = ConfigDict(extra="allow")

    run_id: str
    recipe_name: str
    kind: str = "bench"
    status: Literal["running", "complete", "failed"]
    simulated: bool = False
    started_at: str | None = None
    finished_at: str | None = None
    server_url: str | None = None
    endpoint: str | None = None
    workload: Workload = Field(default_factory=Workload)
    error: str | None = None


class Level(BaseModel):
    """One level of `summary.json`: sglang.bench_serving's keys plus repeat and errors."""

    model_config = ConfigDict(extra="allow")

    concurrency: int
    repeat: int = 0
    completed: int
    failed: int = 0
    errors: dict[str, int] = Field(default_factory=dict)
    duration: float
    request_throughput: float
    input_throughput: float | None = None
    output_throughput: float
    output_throughput_per_gpu: float | None = None
    output_throughput_per_user: float | None = None
    total_input_tokens: int | None = None
    total_output_tokens: int
    mean_ttft_ms: float | None = None
    median_ttft_ms: float | None = None
    p90_ttft_ms: float | None = None
    p99_ttft_ms: float | None = None
    mean_itl_ms: float | None = None
    median_itl_ms: float | None = None
    p90_itl_ms: float | None = None
    p99_itl_ms: float | None = None
    mean_tpot_ms: float | None = None
    mean_e2e_latency_ms: float | None = None
    accept_length: float | None = None
    goodput: float | None = None

    def value(self, key: str) -> float | None:
        raw = getattr(self, key, None)
        if raw is None and self.model_extra:
            raw = self.model_extra.get(key)
        return None if raw is None else float(raw)


class RequestRow(BaseModel):
    """One line of `levels/c<concurrency>-r<repeat>.jsonl`."""

    model_config = ConfigDict(extra="allow")

    concurrency: int
    repeat: int
    index: int
    ok: bool
    error_kind: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    spec_verify_ct: int | None = None
    ttft_s: float | None = None
    itl_s: list[float] = Field(default_factory=list)
    e2e_s: float | None = None
    start_s: float | None = None
    finish_reason: Any = None


class AcceptSet(BaseModel):
    model_config = ConfigDict(extra="allow")

    prompt_set: str
    prompts: int
    completion_tokens: int
    spec_verify_ct: int
    accept_length: float | None
    accept_length_per_prompt: list[float | None] = Field(default_factory=list)


class AcceptResults(BaseModel):
    """`accept.json`."""

    model_config = ConfigDict(extra="allow")

    simulated: bool = False
    sets: list[AcceptSet] = Field(default_factory=list)


class Point(BaseModel):
    """One metric at one concurrency: the repeats' values, their mean and range."""

    concurrency: int
    values: list[float]

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


class RunRecord(BaseModel):
    """A loaded run record folder."""

    path: Path
    run: RunMeta
    recipe: dict[str, Any]
    lock: dict[str, Any] | None = None
    machine: dict[str, Any] | None = None
    server_info: dict[str, Any] | None = None
    levels: list[Level]
    accept: AcceptResults | None = None
    label: str = Field(default="", description="row label: recipe name, unique among loaded runs")

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def recipe_name(self) -> str:
        return self.run.recipe_name

    @property
    def simulated(self) -> bool:
        """True when the run, the server or the acceptance results say they were simulated."""
        return bool(
            self.run.simulated
            or (self.server_info or {}).get("simulated")
            or (self.accept is not None and self.accept.simulated)
        )

    @property
    def machine_class(self) -> str:
        """e.g. `8x RTX PRO 6000 Blackwell, pcie-cross-numa`; `no GPUs` on a CPU box."""
        machine = self.machine or {}
        gpus = machine.get("gpus") or []
        interconnect = str(machine.get("interconnect") or "unknown")
        if not gpus:
            return "no GPUs" if self.machine is not None else "unknown"
        names = sorted({str(g.get("name", "?")).removeprefix("NVIDIA ").strip() for g in gpus})
        return f"{len(gpus)}x {'+'.join(names)}, {interconnect}"

    @property
    def image_digest(self) -> str | None:
        """The image digest from the lock, else from what the server or machine reported."""
        for section in (
            (self.lock or {}).get("image"),
            self.server_info,
            (self.machine or {}).get("image"),
        ):
            if isinstance(section, dict):
                for key in ("digest", "image_digest", "repo_digest", "id", "fingerprint"):
                    value = section.get(key)
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

    @property
    def concurrencies(self) -> list[int]:
        return sorted({level.concurrency for level in self.levels})

    def points(self, metric: str) -> dict[int, Point]:
        """Per concurrency, the metric's value in each repeat (levels without it are left out)."""
        key = METRICS[metric].key if metric in METRICS else metric
        out: dict[int, list[float]] = {}
        for level in sorted(self.levels, key=lambda lv: (lv.concurrency, lv.repeat)):
            value = level.value(key)
            if value is not None:
                out.setdefault(level.concurrency, []).append(value)
        return {c: Point(concurrency=c, values=v) for c, v in out.items()}

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
                    f"{path}:{number}: not a request row: {_first_error(err)}",
                    hint="the file is corrupt; re-run the level with `repro bench --resume`",
                ) from None
        return rows


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


def _first_error(err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
    return f"{where}: {first['msg']}"


def _validate(model: type[BaseModel], data: Any, path: Path, where: str = "") -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise RunRecordError(
            f"{path}: {where}{_first_error(err)}",
            hint="see docs/run-record.md for the expected fields",
        ) from None


def load_run(path: str | Path) -> RunRecord:
    """Load and validate one run record folder (or its `run.json`)."""
    folder = Path(path)
    if folder.name == "run.json":
        folder = folder.parent
    if not folder.is_dir():
        raise RunRecordError(
            f"{folder}: no such run record folder",
            hint="pass a folder under runs/ written by `repro bench`",
        )
    meta: RunMeta = _validate(RunMeta, _read_json(folder / "run.json"), folder / "run.json")
    summary_path = folder / "summary.json"
    summary = _read_json(summary_path)
    if not isinstance(summary, dict) or not isinstance(summary.get("levels"), list):
        raise RunRecordError(f'{summary_path}: expected {{"levels": [...]}}')
    levels = [
        _validate(Level, item, summary_path, f"levels[{i}].")
        for i, item in enumerate(summary["levels"])
    ]
    recipe = _read_json(folder / "recipe.json")
    if not isinstance(recipe, dict):
        raise RunRecordError(f"{folder / 'recipe.json'}: expected a JSON object (the recipe)")
    accept_raw = _read_json(folder / "accept.json", required=False)
    accept = None
    if accept_raw is not None:
        accept = _validate(AcceptResults, accept_raw, folder / "accept.json")
    return RunRecord(
        path=folder,
        run=meta,
        recipe=recipe,
        lock=_optional_object(folder / "lock.json"),
        machine=_optional_object(folder / "machine.json"),
        server_info=_optional_object(folder / "server_info.json"),
        levels=levels,
        accept=accept,
        label=meta.recipe_name,
    )


def _optional_object(path: Path) -> dict[str, Any] | None:
    data = _read_json(path, required=False)
    if data is not None and not isinstance(data, dict):
        raise RunRecordError(f"{path}: expected a JSON object")
    return data


def load_runs(paths: list[str | Path] | tuple[str | Path, ...]) -> list[RunRecord]:
    """Load several run records; labels are made unique (recipe name, then run id)."""
    runs = [load_run(p) for p in paths]
    names = [r.recipe_name for r in runs]
    for run in runs:
        if names.count(run.recipe_name) > 1:
            run.label = f"{run.recipe_name} ({run.run_id})"
    return runs
