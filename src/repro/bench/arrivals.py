"""When an open-loop level's requests are offered, and how closely the client kept to it.

A schedule is the offered send time of each request, in seconds from the level's start. Rate
levels draw the gaps as bench_serving and vLLM's bench do: gamma with shape = burstiness and
scale = 1 / (rate x burstiness), so burstiness 1 is a Poisson process (exponential gaps) and
a burstiness below 1 sends burstier traffic at the same mean rate (vllm/benchmarks/serve.py
`get_request`; SGLang 0.5.23's benchmark/serving.py `get_request` draws the exponential
case); the first request goes at 0. Trace levels send at the trace's timestamps, relative to
its first, divided by a speed-up (bench_serving's `--use-trace-timestamps` multiplies by a
slowdown factor instead).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from repro.errors import ReproError
from repro.schema.level import Arrival, ArrivalMode, Load, closed
from repro.schema.recipe import Bench

POISSON = 1.0
"""The burstiness of a Poisson process."""
MAX_SCHEDULE_S = 24 * 3600.0
"""How long an open-loop level's schedule may span (its first send to its last): a longer
one (`--request-rate 1e-9`, `--trace-speedup 1e-6`, a timestamp years on) is refused before
the server is asked, with the span it would take."""


@dataclass(frozen=True)
class ArrivalPlan:
    """One open-loop level as asked: a rate (with its burstiness) or a trace (with its
    speed-up), and the cap on requests in flight (None: none)."""

    mode: ArrivalMode
    request_rate: float | None = None
    burstiness: float = POISSON
    trace: str | None = None
    speedup: float = 1.0
    max_concurrency: int | None = None

    @classmethod
    def rate(cls, rate: float, burstiness: float, cap: int | None) -> ArrivalPlan:
        mode: ArrivalMode = "poisson" if burstiness == POISSON else "gamma"
        return cls(mode, request_rate=rate, burstiness=burstiness, max_concurrency=cap)


def rate_schedule(n: int, rate: float, burstiness: float, seed: int) -> list[float]:
    """`n` offered send times at `rate` req/s on average, gamma gaps of shape `burstiness`."""
    if n <= 0:
        return []
    gaps = np.random.default_rng(seed).gamma(burstiness, 1.0 / (rate * burstiness), n)
    gaps[0] = 0.0
    return [float(t) for t in np.cumsum(gaps)]


def trace_schedule(timestamps_ms: Sequence[float], speedup: float) -> list[float]:
    """A trace's send times: its timestamps (ms) from its first, `speedup` times faster."""
    if not timestamps_ms:
        return []
    first = timestamps_ms[0]
    return [(t - first) / 1000.0 / speedup for t in timestamps_ms]


def _rate(times: Sequence[float]) -> float | None:
    span = max(times) - min(times) if len(times) > 1 else 0.0
    return (len(times) - 1) / span if span > 0 else None


def kept_schedule(plan: ArrivalPlan, offered: Sequence[float], sent: Sequence[float]) -> Arrival:
    """The level's `Arrival`: the plan, the schedule's rate, the sends' rate and how late the
    sends were (a send waits for the cap, the client's loop or a connection)."""
    lags = np.asarray(sent, dtype=np.float64) - np.asarray(offered, dtype=np.float64)
    stats: dict[str, float | None] = dict.fromkeys(
        ("send_lag_p50_ms", "send_lag_p99_ms", "send_lag_max_ms")
    )
    if lags.size:
        p50, p99 = np.percentile(lags * 1000.0, [50, 99])
        stats.update(
            send_lag_p50_ms=float(p50),
            send_lag_p99_ms=float(p99),
            send_lag_max_ms=float(lags.max() * 1000.0),
        )
    trace = plan.mode == "trace"
    return Arrival(
        mode=plan.mode,
        request_rate=None if trace else plan.request_rate,
        burstiness=None if trace else plan.burstiness,
        trace=plan.trace,
        speedup=plan.speedup if trace else None,
        max_concurrency=plan.max_concurrency,
        offered_rate=_rate(offered),
        achieved_rate=_rate(sent),
        **stats,
    )


def schedule_span(bench: Bench, load: Load, timestamps_ms: Sequence[float] = ()) -> float:
    """Seconds from the level's first offered send to its last: a rate level's mean ((n - 1)
    gaps of 1 / rate), a trace level's (its first n timestamps, sorted, at the speed-up);
    0 for a closed level."""
    n = bench.level_prompts(load)
    if load.kind == "rate":
        return max(0, n - 1) / load.value
    if load.kind == "trace" and timestamps_ms:
        times = timestamps_ms[:n]
        return (max(times) - min(times)) / 1000.0 / load.value
    return 0.0


def check_schedules(bench: Bench, timestamps_ms: Sequence[float] = ()) -> None:
    """Refuse a plan with an open-loop level whose schedule spans more than MAX_SCHEDULE_S
    (`timestamps_ms`: the replayed trace's, in order)."""
    for load in planned_loads(bench):
        span = schedule_span(bench, load, timestamps_ms)
        if span > MAX_SCHEDULE_S:
            what = "mean " if load.kind == "rate" else ""
            n = bench.level_prompts(load)
            if load.kind == "trace":
                n = min(n, len(timestamps_ms))
            raise ReproError(
                f"level {load.label}: its {n} requests' {what}schedule "
                f"spans {span:.3g} s (about {span / 86400:.3g} days), more than the "
                f"{MAX_SCHEDULE_S / 3600:g} h a level may take",
                hint="a higher --request-rate or --trace-speedup, fewer --prompts, or a trace "
                "whose timestamps (ms) are closer together",
            )


def planned_loads(bench: Bench) -> list[Load]:
    """The levels a bench plan sweeps: the trace's speed-ups, else its rates, else its
    concurrencies."""
    if bench.trace is not None:
        return [Load("trace", s) for s in bench.trace_speedup]
    if bench.request_rate is not None:
        return [Load("rate", r) for r in bench.request_rate]
    return [closed(c) for c in bench.concurrencies]


def arrival_plan(bench: Bench, load: Load) -> ArrivalPlan | None:
    """How a level of `bench` is offered; None for a closed-loop level."""
    if load.kind == "rate":
        return ArrivalPlan.rate(load.value, bench.burstiness, bench.max_concurrency)
    if load.kind == "trace":
        return ArrivalPlan(
            "trace", trace=bench.trace, speedup=load.value, max_concurrency=bench.max_concurrency
        )
    return None


def level_seed(load: Load, repeat: int) -> int:
    """The seed of a level's prompts and gaps (closed levels keep the seeds of earlier
    versions, so that a resumed run sends the prompts it started with)."""
    if load.kind == "c":
        return int(load.value) * 1009 + repeat
    kind = 1 if load.kind == "rate" else 2
    return (kind * 10_000_000 + round(load.value * 1000)) * 1009 + repeat


def sweep_description(bench: Bench) -> str:
    """What a plan sweeps, in words: `concurrency sweep [1, 4]`, `request-rate ladder
    [2, 4] req/s, burstiness 0.5`, `trace replay demo at [1, 2]x`."""
    if bench.trace is not None:
        return f"trace replay {bench.trace} at {[_n(s) for s in bench.trace_speedup]}x"
    if bench.request_rate is not None:
        cap = f", at most {bench.max_concurrency} in flight" if bench.max_concurrency else ""
        rates = [_n(r) for r in bench.request_rate]
        return f"request-rate ladder {rates} req/s, burstiness {bench.burstiness:g}{cap}"
    return f"concurrency sweep {bench.concurrencies}"


def _n(value: float) -> int | float:
    return int(value) if value.is_integer() else value
