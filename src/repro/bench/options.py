"""What `repro bench` and `repro accept` are asked, as one base and a subclass each: the same
option has one name and one meaning in both (`prompts` counts prompts: per level in bench,
per prompt set in accept; `prompt_sets` names accept's sets; `forced` is the forced
acceptance a server was launched with, repro.bench.forced).

The options are read, never written back: what a resumed run records (its SLOs, its limits)
goes to its record, not to these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from repro.bench.provenance import Provenance
from repro.bench.target import BenchTarget
from repro.progress import Progress, quiet
from repro.schema.buckets import Bucket
from repro.schema.conversation import Conversations
from repro.schema.forced import ForcedAcceptance
from repro.schema.record import ClientLimits, Endpoint
from repro.schema.slo import SloSearch

ACCEPT_LIMITS = ClientLimits(read_timeout_s=3600.0)
"""accept's defaults: a non-streaming response sends nothing until it is whole."""


@dataclass
class MeasureOptions:
    """What both commands take: where the record goes, the client's limits (None: the run's
    own, else the command's defaults), the chat template, what the record notes."""

    output: Path | None = None
    resume: Path | None = None
    runs_dir: Path = Path("runs")
    read_timeout: float | None = None
    request_timeout: float | None = None
    max_event_bytes: int | None = None
    chat_template_fallback: bool = False  # the built-in ChatML when the model's is missing
    forced: ForcedAcceptance | None = None  # what the server was launched with (--url runs)
    # context-length buckets: the prompts chosen by length, the results given per bucket
    # (bench: over the recipe's bench.length_buckets)
    length_buckets: list[Bucket] | None = None
    provenance: Provenance = field(default_factory=Provenance)  # machine.json, images

    def client_limits(
        self, recorded: ClientLimits | None = None, default: ClientLimits | None = None
    ) -> ClientLimits:
        """The options given, else the run's own (`recorded`), else `default`."""
        given = {
            "read_timeout_s": self.read_timeout,
            "request_timeout_s": self.request_timeout,
            "max_event_bytes": self.max_event_bytes,
        }
        base = recorded or default or ClientLimits()
        return base.model_copy(update={k: v for k, v in given.items() if v is not None})


@dataclass
class BenchOptions(MeasureOptions):
    url: str | None = None
    concurrencies: list[int] | None = None
    input_len: int | None = None
    output_len: int | None = None
    dataset: str | None = None  # overrides recipe bench.dataset (repro.schema.dataset syntax)
    prompts: int | None = None  # measured requests per level
    prompts_per_concurrency: int | None = None  # scales a closed level's requests with c
    endpoint: Endpoint = "generate"
    slos: dict[str, float] | None = None
    max_failed_pct: float | None = None  # None: the run's own (new runs: 1%)
    metrics_interval: float = 0.5  # s between scrapes of the server's /metrics
    gpu_hour_usd: float | None = None  # overrides the recipe's cost.gpu_hour_usd
    request_rates: list[float] | None = None  # open-loop levels, req/s (recipe request_rate)
    burstiness: float | None = None  # gamma shape of their gaps (1: Poisson)
    max_concurrency: int | None = None  # the open-loop levels' cap on requests in flight
    trace: str | None = None  # a Mooncake trace to replay (recipe bench.trace)
    trace_speedups: list[float] | None = None  # its replay speed-ups
    slo_search: SloSearch | None = None  # overrides the recipe's bench.slo_search
    conversation: Conversations | None = None  # overrides the recipe's bench.conversation


@dataclass
class AcceptOptions(MeasureOptions):
    urls: list[str] = field(default_factory=list)  # one per recipe, in order; else the port
    prompt_sets: list[str] | None = None  # default: recipe.accept.prompt_sets
    prompts: int | None = None  # measured prompts per set
    max_new_tokens: int | None = None  # default: 2048 for BENCH_SETS, else the recipe's plan
    thinking: bool | None = None
    concurrency: int = 1
    temperature: float = 0.0
    baseline: BenchTarget | None = None  # a recipe without the drafter, or a server URL
    check_lossless: bool = False
    position_buckets: list[Bucket] | None = None  # acceptance by output position (streamed)
    accuracy: bool = False  # score answers of gsm8k-style sets (accuracy.json)
    progress: Progress = quiet  # "math (1/2): 12/32 prompts" as requests finish

    @property
    def client(self) -> ClientLimits:
        return self.client_limits(default=ACCEPT_LIMITS)
