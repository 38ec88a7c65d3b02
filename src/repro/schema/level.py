"""A bench run's measurements (docs/run-record.md): `summary.json`, one `Level` per finished
(concurrency, repeat) with the spread over repeats, and `levels/c<c>-r<r>.jsonl`, one
`RequestRow` per request as the client saw it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from repro.schema.base import Interval
from repro.schema.buckets import LengthBucketLevel
from repro.schema.conversation import ConversationLevel
from repro.schema.server import LevelEnergy, ServerState, SimClock


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
    name for name in ConcurrencySpread.model_fields if name not in ("concurrency", "repeats")
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
    finish_reason: str | None = None
    error: str | None = Field(default=None, description="the error message when not ok")
    conversation: int | None = Field(
        default=None, description="a multi-turn level: which conversation (from 0)"
    )
    turn: int | None = Field(default=None, description="a multi-turn level: which turn (from 0)")
