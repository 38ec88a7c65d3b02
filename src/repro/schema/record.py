"""The run record (docs/run-record.md): one typed model per file of a run folder.

`repro bench`, `repro accept` and `repro run` build these models and dump them
(`model_dump(mode="json")`); `repro report` and `repro compare` validate the same files with
the same models. Models of files that other programs fill in (the server's `/server_info`, a
machine fingerprint) declare the fields repro reads and keep every other key (`extra="allow"`),
so a record keeps what was reported and old records keep loading.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
)

from repro.schema.accept import AcceptProtocol, AcceptResults, TemplateUse
from repro.schema.accuracy import AccuracyResults
from repro.schema.client import ClientLimits
from repro.schema.dataset import PromptSource
from repro.schema.forced import ForcedAcceptance
from repro.schema.level import Level, Load
from repro.schema.lock import Lock
from repro.schema.machine import MachineInfo
from repro.schema.recordedrecipe import RecordedRecipe
from repro.schema.serverinfo import ServerInfo

Endpoint = Literal["generate", "chat"]
RunStatus = Literal["running", "complete", "failed"]


class BenchWorkload(BaseModel):
    """What a bench run sends: the recipe's bench plan after CLI overrides."""

    model_config = ConfigDict(extra="allow")

    input_len: int | None = Field(
        default=None, description="prompt length (tokens) of random/chat sets"
    )
    output_len: int | None = Field(default=None, description="tokens generated per request")
    dataset: str | None = Field(default=None, description="the dataset reference as given")
    prompts_per_level: int | None = Field(default=None, description="measured requests per level")
    prompts_per_concurrency: int | None = Field(
        default=None, description="requests per unit of concurrency (Bench.level_prompts)"
    )
    warmup: int | None = Field(default=None, description="unrecorded requests before each level")
    repeats: int | None = Field(default=None, description="how often every concurrency is measured")
    request_rate: list[float] | float | None = Field(
        default=None,
        description="the open-loop rates swept, req/s (older runs: one rate, Poisson, for "
        "every concurrency); None: closed loop",
    )
    burstiness: float | None = Field(
        default=None, description="gamma shape of the rate levels' gaps (1: Poisson)"
    )
    max_concurrency: int | None = Field(
        default=None, description="the open-loop levels' cap on requests in flight"
    )
    trace: str | None = Field(default=None, description="the Mooncake trace replayed, as given")
    trace_speedup: list[float] | None = Field(default=None, description="its speed-ups swept")
    trace_source: PromptSource | None = Field(
        default=None, description="exactly which trace ran (shipped/file/hub)"
    )
    dataset_source: PromptSource | None = Field(
        default=None, description="exactly which prompts ran (shipped/file/hub); None for random"
    )
    chat_template: TemplateUse | None = Field(
        default=None,
        description="the template file, its thinking switch and value, the kwargs sent on "
        "chat, the fallback reason; None: random words, not templated (or an older run)",
    )


class AcceptWorkload(BaseModel):
    """What an accept run sends."""

    model_config = ConfigDict(extra="allow")

    accept: dict[str, Any] | None = Field(
        default=None, description="the recipe's accept plan, if any"
    )
    chat_template: TemplateUse | str | None = Field(
        default=None,
        description="the template file, thinking switch and value, fallback (older runs: "
        "where the template came from, as text)",
    )
    protocol: AcceptProtocol | None = Field(
        default=None, description="thinking, concurrency, sampling, warmup (as in accept.json)"
    )


class ServerIdentity(BaseModel):
    """What a run checked the server against before measuring it (repro.bench.identity): the
    recipe or its lock (None: `--url` alone, nothing to check), the keys compared, and what
    `/server_info` reported for them (kept as reported: a resumed run compares them again)."""

    model_config = ConfigDict(extra="allow")

    checked_against: Literal["recipe", "lock"] | None = None
    checked: list[str] = Field(default_factory=list, description="the keys that matched")
    found: dict[str, Any] = Field(
        default_factory=dict, description="model_path, revision, speculative_*, *_size, image_id"
    )


class RunInfo(BaseModel):
    """`run.json`: the fields every run kind writes."""

    model_config = ConfigDict(extra="allow")

    run_id: str = Field(description="the run folder's name")
    recipe_name: str
    kind: str = Field(default="bench", description="which command wrote the record")
    status: RunStatus
    simulated: bool = Field(default=False, description="measured against the simulator")
    started_at: str | None = Field(default=None, description="UTC, ISO 8601 with Z")
    finished_at: str | None = None
    server_url: str | None = None
    endpoint: Endpoint | None = Field(default=None, description="the API the requests went to")
    workload: BenchWorkload | AcceptWorkload
    server_identity: ServerIdentity | None = Field(
        default=None, description="what the server was checked against before the run"
    )
    error: str | None = Field(default=None, description="why the run failed")
    forced_acceptance: ForcedAcceptance | None = Field(
        default=None,
        description="the server ran with SGLANG_SIMULATE_ACC_LEN: its acceptance is forced, "
        "not the drafter's (None: not forced, or an older run)",
    )


class BenchRunInfo(RunInfo):
    """`run.json` of `repro bench` (kind "bench")."""

    kind: Literal["bench"] = "bench"
    workload: BenchWorkload
    slos: dict[str, float] | None = Field(
        default=None, description="goodput SLOs in ms by ttft/tpot/e2e; None: no goodput"
    )
    max_failed_pct: float = Field(
        default=1.0, description="a level with more failed requests (percent) is invalid"
    )
    gpu_hour_usd: float | None = Field(
        default=None, description="price of one GPU-hour (recipe cost or --gpu-hour-usd)"
    )
    client_limits: ClientLimits | None = Field(
        default=None, description="the client's timeouts and event size limit (None: older runs)"
    )


class AcceptRunInfo(RunInfo):
    """`run.json` of a run folder made by `repro accept` (kind "accept")."""

    kind: Literal["accept"] = "accept"
    workload: AcceptWorkload


def _run_kind(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("kind", "bench"))
    return str(getattr(value, "kind", "bench"))


AnyRunInfo = Annotated[
    Annotated[BenchRunInfo, Tag("bench")] | Annotated[AcceptRunInfo, Tag("accept")],
    Discriminator(_run_kind),
]
"""`run.json` of either kind, told apart by its `kind` (absent: bench)."""


class RunRecord(BaseModel):
    """A run folder's files, validated."""

    path: Path = Field(description="the run folder")
    run: AnyRunInfo
    recipe: RecordedRecipe = Field(description="recipe.json: the resolved recipe")
    lock: Lock | None = Field(default=None, description="lock.json, when a lock was used")
    machine: MachineInfo | None = None
    server_info: ServerInfo | None = None
    levels: list[Level] = Field(description="summary.json's finished levels")
    accept: AcceptResults | None = None
    accuracy: AccuracyResults | None = Field(default=None, description="accuracy.json")

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
            or (self.server_info is not None and self.server_info.simulated)
            or (self.accept is not None and self.accept.simulated)
        )

    @property
    def forced(self) -> ForcedAcceptance | None:
        """How the run's acceptance was forced (None: the drafter's own)."""
        if self.run.forced_acceptance is not None:
            return self.run.forced_acceptance
        return self.accept.forced_acceptance if self.accept is not None else None

    @property
    def concurrencies(self) -> list[int]:
        return sorted({level.concurrency for level in self.levels})

    @property
    def loads(self) -> list[Load]:
        """The levels' loads (concurrencies, rates, trace speed-ups), in order."""
        return sorted({level.load for level in self.levels})


StageStatus = Literal["pending", "done", "skipped", "failed"]


class StageRecord(BaseModel):
    """One stage of `repro run` in `stages.json`: what `--resume` skips."""

    name: str = Field(description="doctor, lock, image, fetch, launch, accept, bench, ...")
    status: StageStatus = "pending"
    seconds: float | None = Field(default=None, description="how long the stage ran")
    summary: str = Field(
        default="", description="the stage's one-line result, or its whole error (every line)"
    )


class StagesFile(BaseModel):
    """`stages.json` at the top of a `repro run` folder, rewritten after every stage."""

    updated_at: str = Field(description="UTC, ISO 8601")
    stages: list[StageRecord]
