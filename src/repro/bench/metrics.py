"""Per-level statistics (numpy), with the keys of `sglang.bench_serving`'s result dict.

Definitions follow sglang/benchmark/serving.py (SGLang 0.5.23) `calculate_metrics`:
throughputs are totals over the level's duration (first request start to last request end,
warmup excluded), TPOT per request is (E2E - TTFT) / (completion_tokens - 1) for requests with
more than one token, ITL is per token (its `/generate` reader spreads each chunk gap over the
new tokens the chunk carries, once per token), percentiles are numpy's linear ones.
Additions: the per-chunk gaps (`*_chunk_gap_ms`: a speculative server's verify-step latency),
`output_throughput_per_gpu`, `output_throughput_per_user` (mean over requests of
completion_tokens / E2E: the speed one user sees), `errors` by kind, `goodput` under SLOs,
verify steps per second, and acceptance under both conventions: pooled `accept_length` =
sum(completion_tokens) / sum(spec_verify_ct) over the level (never the server's cumulative
average, which counts everything since boot and is wrong under DP) and the mean of per-request
values (z-lab's DFlash benchmark), each with a seeded 95% bootstrap interval over requests.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypedDict

import numpy as np

from repro.bench.client.result import RequestResult
from repro.errors import ReproError
from repro.schema.base import Interval
from repro.schema.level import SPREAD_KEYS, ConcurrencySpread, Level, Load, Range, RequestRow

BOOTSTRAP_RESAMPLES = 1000


def _stats(name: str, values_s: Iterable[float]) -> dict[str, float | None]:
    arr = np.fromiter(values_s, dtype=np.float64) * 1000.0
    if arr.size == 0:
        return {f"{k}_{name}_ms": None for k in ("mean", "median", "p90", "p99")}
    p50, p90, p99 = np.percentile(arr, [50, 90, 99])
    return {
        f"mean_{name}_ms": float(arr.mean()),
        f"median_{name}_ms": float(p50),
        f"p90_{name}_ms": float(p90),
        f"p99_{name}_ms": float(p99),
    }


def per_token_itl(chunk_gaps: Sequence[float], chunk_tokens: Sequence[int]) -> list[float]:
    """bench_serving 0.5.23's ITL (benchmark/serving.py, `async_request_sglang_generate`):
    each chunk gap divided by the new tokens the chunk carries, once per token."""
    out: list[float] = []
    for gap, tokens in zip(chunk_gaps, chunk_tokens, strict=True):
        if tokens > 0:
            out += [gap / tokens] * tokens
    return out


def request_row(result: RequestResult) -> RequestRow:
    """One line of the level's JSONL: the request with both its per-token ITL and chunk gaps."""
    row = RequestRow.model_validate(result, from_attributes=True)
    row.itl_s = per_token_itl(result.chunk_gap_s, result.chunk_tokens)
    return row


def seeded_rng(name: str) -> np.random.Generator:
    """A generator seeded by `name`: the same intervals on every run of the same data."""
    return np.random.default_rng(zlib.crc32(name.encode()))


def bootstrap(
    statistic: Any, columns: Sequence[np.ndarray], rng: np.random.Generator
) -> Interval | None:
    """95% percentile interval of `statistic(*resampled columns)` over requests drawn with
    replacement (each column indexed by the same draw, shape resamples x requests)."""
    n = len(columns[0])
    if n < 2:
        return None
    draw = rng.integers(0, n, size=(BOOTSTRAP_RESAMPLES, n))
    values = statistic(*(col[draw] for col in columns))
    low, high = np.percentile(values, [2.5, 97.5])
    return Interval(low=float(low), high=float(high))


class SpecCounts(Protocol):
    """What acceptance needs of a request (a streamed RequestResult or an accept Completion)."""

    @property
    def completion_tokens(self) -> int: ...
    @property
    def spec_verify_ct(self) -> int | None: ...


class AcceptanceStats(TypedDict):
    """Acceptance under both conventions, as AcceptSet and Level name them (the pooled one:
    Level's `accept_length`, written `accept_length_pooled`)."""

    accept_length: float | None
    accept_length_ci95: Interval | None
    accept_length_mean_per_request: float | None
    accept_length_mean_per_request_ci95: Interval | None


def acceptance_stats(ok: Sequence[SpecCounts], rng: np.random.Generator) -> AcceptanceStats:
    """Both conventions over the requests that report spec_verify_ct, with 95% intervals."""
    spec = [r for r in ok if r.spec_verify_ct]
    if not spec:
        return AcceptanceStats(
            accept_length=None,
            accept_length_ci95=None,
            accept_length_mean_per_request=None,
            accept_length_mean_per_request_ci95=None,
        )
    tokens = np.array([r.completion_tokens for r in spec], dtype=np.float64)
    verify = np.array([r.spec_verify_ct for r in spec], dtype=np.float64)
    return AcceptanceStats(
        accept_length=float(tokens.sum() / verify.sum()),
        accept_length_ci95=bootstrap(
            lambda t, v: t.sum(axis=1) / v.sum(axis=1), [tokens, verify], rng
        ),
        accept_length_mean_per_request=float((tokens / verify).mean()),
        accept_length_mean_per_request_ci95=bootstrap(
            lambda ratio: ratio.mean(axis=1), [tokens / verify], rng
        ),
    )


def _throughput_interval(
    ok: Sequence[RequestResult], output_throughput: float, rng: np.random.Generator
) -> Interval | None:
    """The level's output throughput scaled by the resampled requests' token rate
    (sum completion_tokens / sum E2E) relative to all requests' rate: the spread that
    request-to-request variation puts on the throughput."""
    timed = [r for r in ok if r.e2e_s]
    tokens = np.array([r.completion_tokens for r in timed], dtype=np.float64)
    e2e = np.array([r.e2e_s for r in timed], dtype=np.float64)
    if not timed or tokens.sum() == 0:
        return None
    scale = output_throughput / (tokens.sum() / e2e.sum())
    return bootstrap(lambda t, e: t.sum(axis=1) / e.sum(axis=1) * scale, [tokens, e2e], rng)


def accept_length(results: Iterable[RequestResult]) -> float | None:
    """sum(completion_tokens) / sum(spec_verify_ct) over the requests that report it."""
    tokens = verify = 0
    for r in results:
        if r.ok and r.spec_verify_ct:
            tokens += r.completion_tokens
            verify += r.spec_verify_ct
    return tokens / verify if verify else None


def _tpot(r: RequestResult) -> float | None:
    if r.e2e_s is None or r.ttft_s is None or r.completion_tokens <= 1:
        return None
    return (r.e2e_s - r.ttft_s) / (r.completion_tokens - 1)


SLO_KEYS = {"ttft_ms": "ttft", "tpot_ms": "tpot", "e2e_ms": "e2e"}


def parse_slos(specs: Iterable[str]) -> dict[str, float] | None:
    """`["ttft_ms=500", "tpot_ms=50"]` (the CLI's `--slo`) -> `{"ttft": 500.0, "tpot": 50.0}`.

    A request counts toward goodput when it meets every SLO given (bench_serving's
    `--goodput ttft:500 tpot:50`, with the unit in the key). None when no SLO is given.
    """
    slos: dict[str, float] = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        name = SLO_KEYS.get(key.strip().lower())
        try:
            limit = float(value)
        except ValueError:
            limit = float("nan")
        if not sep or name is None or not limit > 0 or limit == float("inf"):
            raise ReproError(
                f"--slo {spec!r} is not KEY=MILLISECONDS with KEY one of " + ", ".join(SLO_KEYS),
                hint="e.g. --slo ttft_ms=500 --slo tpot_ms=50 (a positive number of ms each)",
            )
        slos[name] = limit
    return slos or None


# repro's SLO keys (run.json `slos`) -> goodput.py's (GOODPUT_SLO_METRICS)
GOODPUT_NAMES = {"ttft": "ttft", "tpot": "tpot", "e2e": "e2el"}


@dataclass(frozen=True)
class Goodput:
    request_goodput: float
    slo_attainment: float
    slos_ms: dict[str, float]  # by goodput.py's names (ttft, tpot, e2el)
    by_metric: dict[str, float]


def goodput(results: Sequence[RequestResult], slos: Mapping[str, float], dur: float) -> Goodput:
    """sglang/benchmark/goodput.py `calculate_goodput`: a successful request is good when it
    meets every SLO (ms; a one-token response's TPOT counts as 0); request_goodput = good / s,
    slo_attainment = good / requests sent, and per SLO the share that met it."""
    named = {GOODPUT_NAMES[k]: v for k, v in slos.items()}
    good, met_by = 0, dict.fromkeys(named, 0)
    for r in results:
        if not r.ok or r.ttft_s is None or r.e2e_s is None:
            continue
        observed = {"ttft": r.ttft_s, "tpot": _tpot(r) or 0.0, "e2el": r.e2e_s}
        met = [name for name, limit in named.items() if observed[name] * 1000.0 <= limit]
        for name in met:
            met_by[name] += 1
        good += len(met) == len(named)
    sent = len(results) or 1
    return Goodput(
        request_goodput=good / dur,
        slo_attainment=good / sent,
        slos_ms=named,
        by_metric={name: n / sent for name, n in met_by.items()},
    )


def summarize_level(
    results: Sequence[RequestResult],
    *,
    concurrency: int,
    repeat: int,
    duration: float,
    gpus: int = 0,
    slos: Mapping[str, float] | None = None,
    server_accept_length: float | None = None,
) -> Level:
    """What the requests of one level say (one entry of `summary.json` `levels`: Level says
    which keys are bench_serving's); `server_accept_length` is the server's own
    (bench_serving's `accept_length`). repro.bench.observer adds the server's side."""
    ok = [r for r in results if r.ok]
    errors = Counter(r.error_kind or "unknown" for r in results if not r.ok)
    total_in = sum(r.prompt_tokens for r in ok)
    total_out = sum(r.completion_tokens for r in ok)
    dur = duration if duration > 0 else float("nan")
    out_tp = total_out / dur if ok else 0.0
    per_user = [r.completion_tokens / r.e2e_s for r in ok if r.e2e_s]
    itl = (t for r in ok for t in per_token_itl(r.chunk_gap_s, r.chunk_tokens))
    gaps = [gap for r in ok for gap in r.chunk_gap_s]
    latencies = {
        **_stats("ttft", (r.ttft_s for r in ok if r.ttft_s is not None)),
        **_stats("itl", itl),
        **_stats("chunk_gap", gaps),
        **_stats("tpot", (t for r in ok if (t := _tpot(r)) is not None)),
        **_stats("e2e_latency", (r.e2e_s for r in ok if r.e2e_s is not None)),
    }
    rng = np.random.default_rng(concurrency * 1009 + repeat)  # seeded: a level's CIs repeat
    acceptance = acceptance_stats(ok, rng)
    verify = sum(r.spec_verify_ct or 0 for r in ok)
    level = Level(  # by the JSON keys (aliases): bench_serving's names where they differ
        max_concurrency=concurrency,
        # bench_serving: np.sum(e2e_latencies) / dur_s over the successful requests
        concurrency=sum(r.e2e_s for r in ok if r.e2e_s is not None) / dur if ok else 0.0,
        repeat=repeat,
        completed=len(ok),
        failed=len(results) - len(ok),
        errors=dict(sorted(errors.items())),
        duration=duration,
        request_throughput=len(ok) / dur if ok else 0.0,
        prompt_throughput=total_in / dur if ok else 0.0,
        output_throughput=out_tp,
        output_throughput_per_gpu=out_tp / gpus if gpus > 0 else None,
        output_throughput_per_user=float(np.mean(per_user)) if per_user else None,
        total_prompt_tokens=total_in,
        total_output_tokens=total_out,
        merged_chunk_pct=sum(1 for g in gaps if g == 0.0) / len(gaps) * 100 if gaps else None,
        accept_length_pooled=acceptance["accept_length"],
        accept_length_ci95=acceptance["accept_length_ci95"],
        accept_length_mean_per_request=acceptance["accept_length_mean_per_request"],
        accept_length_mean_per_request_ci95=acceptance["accept_length_mean_per_request_ci95"],
        accept_length=server_accept_length,
        output_throughput_ci95=_throughput_interval(ok, out_tp, rng) if ok else None,
        spec_verify_ct=verify if verify else None,
        verify_steps_per_s=verify / dur if verify else None,
    )
    for key, value in latencies.items():  # mean_ttft_ms ... p99_e2e_latency_ms
        setattr(level, key, value)
    if slos and ok:
        good = goodput(results, slos, dur)
        level.goodput, level.slo_attainment = good.request_goodput, good.slo_attainment
        level.goodput_slos_ms, level.slo_attainment_by_metric = good.slos_ms, good.by_metric
    return level


def spread(levels: Sequence[Level]) -> list[ConcurrencySpread]:
    """min / median / max over the repeats of each load (a concurrency, a rate, a trace
    speed-up), for the SPREAD_KEYS."""
    by_load: dict[Load, list[Level]] = {}
    for level in levels:
        by_load.setdefault(level.load, []).append(level)
    out = []
    for load, group in sorted(by_load.items()):
        ranges: dict[str, Range] = {}
        for key in SPREAD_KEYS:
            vals = [v for g in group if (v := g.value(key)) is not None]
            if vals:
                ranges[key] = Range(min=min(vals), median=float(np.median(vals)), max=max(vals))
        label = None if load.kind == "c" else load.label
        out.append(
            ConcurrencySpread(
                concurrency=group[0].concurrency, load=label, repeats=len(group), **ranges
            )
        )
    return out
