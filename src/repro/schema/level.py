"""A bench run's measurements (docs/run-record.md): `summary.json`, one `Level` per finished
(load, repeat) with the spread over repeats, and `levels/<load>-r<r>.jsonl` (`c4-r0`,
`rate4-r0`, `trace1x-r0`), one `RequestRow` per request as the client saw it."""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, model_validator

from repro.schema.base import Interval
from repro.schema.buckets import LengthBucketLevel
from repro.schema.conversation import ConversationLevel
from repro.schema.server import LevelEnergy, ServerState, SimClock

ArrivalMode = Literal["poisson", "gamma", "trace"]
LoadKind = Literal["c", "rate", "trace"]


def _number(value: float) -> str:
    return f"{int(value)}" if float(value).is_integer() else f"{value:g}"


class Load(NamedTuple):
    """What a level offered, as resume, file names and reports key it: a closed loop at a
    concurrency (`c`), an open loop at a request rate (`rate`, req/s) or a trace replayed at
    a speed-up (`trace`). Sorts closed levels first, then rates, then traces."""

    kind: LoadKind
    value: float

    @property
    def label(self) -> str:
        """How tables head it: `c=4`, `r=4/s`, `trace 2x`."""
        if self.kind == "c":
            return f"c={_number(self.value)}"
        if self.kind == "rate":
            return f"r={_number(self.value)}/s"
        return f"trace {_number(self.value)}x"

    @property
    def stem(self) -> str:
        """How its files are named: `c4`, `rate4`, `trace2x` (then `-r<repeat>`)."""
        suffix = "x" if self.kind == "trace" else ""
        return f"{self.kind}{_number(self.value)}{suffix}"


def closed(concurrency: int) -> Load:
    return Load("c", concurrency)


def as_load(load: Load | int) -> Load:
    """A level's load, where a bare int (how callers before open loops named levels) is a
    closed-loop concurrency."""
    return load if isinstance(load, Load) else closed(load)


class Arrival(BaseModel):
    """How an open-loop level's requests were offered, and how closely the client kept to the
    schedule; the schedule itself is each request row's `offered_s` beside its `start_s`."""

    mode: ArrivalMode = Field(
        description="poisson (burstiness 1), gamma (burstiness != 1) or trace (timestamps)"
    )
    request_rate: float | None = Field(
        default=None, description="the configured rate, req/s; None for a trace"
    )
    burstiness: float | None = Field(
        default=None, description="gamma shape (1: Poisson; < 1 burstier); None for a trace"
    )
    trace: str | None = Field(default=None, description="the trace replayed, as given")
    speedup: float | None = Field(default=None, description="trace time / replay time")
    max_concurrency: int | None = Field(
        default=None, description="requests in flight at most; None: no cap"
    )
    offered_rate: float | None = Field(
        default=None, description="the schedule's own rate: (n - 1) / (last - first offered)"
    )
    achieved_rate: float | None = Field(
        default=None, description="the sends' rate: (n - 1) / (last - first send)"
    )
    send_lag_p50_ms: float | None = Field(
        default=None, description="send time - offered time, median over requests"
    )
    send_lag_p99_ms: float | None = None
    send_lag_max_ms: float | None = None

    def load(self) -> Load:
        if self.mode == "trace":
            return Load("trace", self.speedup or 1.0)
        return Load("rate", self.request_rate or 0.0)


class Level(BaseModel):
    """One level of `summary.json`: sglang.bench_serving's keys, each meaning what it means
    there (SGLang 0.5.23 benchmark/serving.py `calculate_metrics` and its result dict,
    benchmark/goodput.py), plus repeat, errors, spread and repro's own keys.

    Where repro measures something else under a bench_serving name, the JSON key differs
    from the attribute: `concurrency` (attribute; the configured level) is written as
    bench_serving's `max_concurrency`, and bench_serving's `concurrency` is the achieved
    sum(E2E) / duration (`achieved_concurrency`); the pooled acceptance (`accept_length`) is
    written as `accept_length_pooled`, and bench_serving's `accept_length` is the server's
    `avg_spec_accept_length` of DP rank 0 after the level (`server_accept_length`); prompt
    tokens are the server's `prompt_tokens` (`total_prompt_tokens`, `prompt_throughput`; bench
    serving's `total_input_tokens` counts the client's tokenizer); goodput is goodput.py's
    `request_goodput`. Records written before (no `max_concurrency` key) load with their keys'
    old meanings.
    """

    model_config = ConfigDict(extra="allow", serialize_by_alias=True, validate_by_name=True)

    concurrency: int = Field(
        alias="max_concurrency",
        description="the configured level: requests in flight (closed loop) or the cap",
    )
    achieved_concurrency: float | None = Field(
        default=None,
        alias="concurrency",
        description="bench_serving's concurrency: sum of E2E over successful requests / duration",
    )
    repeat: int = Field(default=0, description="which repeat of this concurrency, from 0")
    completed: int = Field(description="requests that succeeded")
    failed: int = 0
    errors: dict[str, int] = Field(default_factory=dict, description="failed requests by kind")
    duration: float = Field(description="s, first request start to last request end")
    request_throughput: float = Field(description="completed requests/s")
    input_throughput: float | None = Field(
        default=None,
        alias="prompt_throughput",
        description="server-counted prompt tokens/s (bench_serving's input_throughput counts "
        "client-side prompt lengths)",
    )
    output_throughput: float = Field(description="generated tokens/s")
    output_throughput_per_gpu: float | None = Field(
        default=None, description="None without a GPU count"
    )
    output_throughput_per_user: float | None = Field(
        default=None, description="mean over requests of completion_tokens / E2E"
    )
    total_input_tokens: int | None = Field(
        default=None, alias="total_prompt_tokens", description="the server's prompt_tokens, summed"
    )
    total_output_tokens: int
    mean_ttft_ms: float | None = None
    median_ttft_ms: float | None = None
    p90_ttft_ms: float | None = None
    p99_ttft_ms: float | None = None
    mean_itl_ms: float | None = Field(
        default=None, description="per token, as bench_serving: chunk gap / its new tokens"
    )
    median_itl_ms: float | None = None
    p90_itl_ms: float | None = None
    p99_itl_ms: float | None = None
    mean_chunk_gap_ms: float | None = Field(
        default=None, description="per stream chunk carrying tokens (a verify step's latency)"
    )
    median_chunk_gap_ms: float | None = None
    p90_chunk_gap_ms: float | None = None
    p99_chunk_gap_ms: float | None = None
    merged_chunk_pct: float | None = Field(
        default=None,
        description="% of token chunks read in one socket read with the one before (a gap of "
        "0): the client or the server's front end fell behind the stream, and ITL understates",
    )
    mean_tpot_ms: float | None = None
    median_tpot_ms: float | None = None
    p90_tpot_ms: float | None = None
    p99_tpot_ms: float | None = None
    mean_e2e_latency_ms: float | None = None
    median_e2e_latency_ms: float | None = None
    p90_e2e_latency_ms: float | None = None
    p99_e2e_latency_ms: float | None = None
    accept_length: float | None = Field(
        default=None,
        alias="accept_length_pooled",
        description="pooled (tokens per verify step): sum completion_tokens / sum spec_verify_ct;"
        " None without spec",
    )
    server_accept_length: float | None = Field(
        default=None,
        alias="accept_length",
        description="bench_serving's accept_length: the server's avg_spec_accept_length "
        "(internal_states[0], DP rank 0, cumulative since start or flush) after the level",
    )
    accept_length_ci95: Interval | None = None
    accept_length_mean_per_request: float | None = Field(
        default=None, description="mean over requests of completion_tokens / spec_verify_ct"
    )
    accept_length_mean_per_request_ci95: Interval | None = None
    output_throughput_ci95: Interval | None = None
    spec_verify_ct: int | None = Field(default=None, description="verify steps, all requests")
    verify_steps_per_s: float | None = Field(
        default=None, description="spec_verify_ct / duration: engine speed apart from acceptance"
    )
    goodput: float | None = Field(
        default=None,
        alias="request_goodput",
        description="goodput.py's request_goodput: requests/s meeting every SLO (a one-token "
        "response's TPOT counts as 0); None: no SLOs",
    )
    goodput_slos_ms: dict[str, float] | None = Field(
        default=None, description="the SLOs in ms, by goodput.py's names (ttft, tpot, e2el)"
    )
    slo_attainment: float | None = Field(
        default=None, description="good requests / requests sent (goodput.py)"
    )
    slo_attainment_by_metric: dict[str, float] | None = Field(
        default=None, description="per SLO: requests meeting it / requests sent (goodput.py)"
    )
    client_cpu_s: float | None = Field(
        default=None, description="CPU time the bench process used during the level"
    )
    client_cpu_per_s: float | None = Field(
        default=None, description="client_cpu_s / duration (1.0: one core busy all along)"
    )
    server: ServerState | None = None
    energy: LevelEnergy | None = Field(default=None, description="GPU energy readings")
    sim_clock: SimClock | None = Field(
        default=None, description="the simulator's own lag; None for a real server"
    )
    conversation: ConversationLevel | None = Field(
        default=None, description="a multi-turn level: its cache state and cached_tokens by turn"
    )
    by_length: list[LengthBucketLevel] | None = Field(
        default=None, description="with --length-buckets: the requests by context-length bucket"
    )
    joules_per_output_token: float | None = Field(
        default=None, description="energy.energy_j / total_output_tokens"
    )
    mean_power_w: float | None = Field(default=None, description="energy.mean_power_w")
    usd_per_mtok: float | None = Field(
        default=None,
        description="dollars per million output tokens: gpus x gpu_hour_usd / output tok/s",
    )
    arrival: Arrival | None = Field(
        default=None,
        description="open loop: the rate or trace and the schedule kept; None: "
        "closed loop at `max_concurrency`",
    )
    valid: bool = Field(default=True, description="False: the numbers do not measure the server")
    reasons: list[str] = Field(default_factory=list, description="why the level is invalid")

    @model_validator(mode="before")
    @classmethod
    def _older_meanings(cls, data: Any) -> Any:
        """A level written before the bench_serving names (no `max_concurrency`): its
        `concurrency` was the configured level, `accept_length` the pooled acceptance,
        `goodput` the request goodput, `total_input_tokens`/`input_throughput` the server's
        prompt tokens."""
        if not isinstance(data, dict) or "max_concurrency" in data or "concurrency" not in data:
            return data
        renamed = {
            "concurrency": "max_concurrency",
            "accept_length": "accept_length_pooled",
            "goodput": "request_goodput",
            "total_input_tokens": "total_prompt_tokens",
            "input_throughput": "prompt_throughput",
        }
        return {renamed.get(k, k): v for k, v in data.items()}

    @property
    def load(self) -> Load:
        return self.arrival.load() if self.arrival is not None else closed(self.concurrency)

    @property
    def key(self) -> tuple[Load, int]:
        """(load, repeat): what resume and the level's files know it by."""
        return self.load, self.repeat

    def value(self, key: str) -> float | None:
        """A numeric key (declared or extra) as a float; None where the level lacks it."""
        raw = getattr(self, key, None)
        if raw is None and self.model_extra:
            raw = self.model_extra.get(key)
        return None if raw is None else float(raw)


class Range(BaseModel):
    """One metric over the repeats of a concurrency."""

    min: float
    median: float
    max: float


class ConcurrencySpread(BaseModel):
    """`summary.json` `spread`: each metric's range over the repeats of one concurrency."""

    concurrency: int
    load: str | None = Field(
        default=None, description="an open-loop level's label (r=4/s, trace 1x); None: closed"
    )
    repeats: int = Field(description="how many levels (repeats) the ranges cover")
    output_throughput: Range | None = None
    request_throughput: Range | None = None
    median_ttft_ms: Range | None = None
    median_itl_ms: Range | None = None
    median_chunk_gap_ms: Range | None = None
    median_tpot_ms: Range | None = None
    median_e2e_latency_ms: Range | None = None
    accept_length: Range | None = None
    verify_steps_per_s: Range | None = None


SPREAD_KEYS: tuple[str, ...] = tuple(
    name
    for name in ConcurrencySpread.model_fields
    if name not in ("concurrency", "load", "repeats")
)
"""The level keys `spread` gives ranges for."""


class Summary(BaseModel):
    """`summary.json`, rewritten after every finished level."""

    levels: list[Level]
    spread: list[ConcurrencySpread] = Field(default_factory=list)


class RequestRow(BaseModel):
    """One line of `levels/c<concurrency>-r<repeat>.jsonl`: one request as the client saw it."""

    model_config = ConfigDict(extra="allow")

    concurrency: int
    repeat: int
    index: int = Field(description="the request's position in the level")
    ok: bool
    error_kind: str | None = Field(default=None, description="timeout, http, ... when not ok")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    spec_verify_ct: int | None = Field(default=None, description="verify steps; None without spec")
    ttft_s: float | None = Field(default=None, description="s to the first event carrying tokens")
    itl_s: list[float] = Field(
        default_factory=list, description="s per token after the first (bench_serving's itl)"
    )
    chunk_gap_s: list[float] = Field(
        default_factory=list, description="s between events carrying tokens"
    )
    chunk_tokens: list[int] = Field(
        default_factory=list, description="new tokens of the event ending each chunk gap"
    )
    e2e_s: float | None = Field(default=None, description="s to the end of the stream")
    start_s: float = Field(default=0.0, description="s from the level's start to sending")
    offered_s: float | None = Field(
        default=None,
        description="open loop: s from the level's start to the send the schedule offered",
    )
    finish_reason: str | None = None
    error: str | None = Field(default=None, description="the error message when not ok")
    conversation: int | None = Field(
        default=None, description="a multi-turn level: which conversation (from 0)"
    )
    turn: int | None = Field(default=None, description="a multi-turn level: which turn (from 0)")
