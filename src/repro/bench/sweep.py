"""`repro bench`: a sweep against a running server, written as a run record.

`run_bench` measures a `BenchTarget` (repro.bench.target) or resumes a run, either way as
the `SweepPlan` sweeprecord.py opens. Each (load, repeat) level (a closed loop at a
concurrency, an open loop at a request rate, or a trace replayed at a speed-up:
repro.bench.arrivals) runs its warmup requests (not recorded, closed loop), then
`prompts_per_level` measured requests (a trace: its first ones) while the level observer
(observer.py) watches the server through the run's one session; the level's record is built
once from what it saw, and its per-request JSONL, its metrics series and the updated
summary.json are written as soon as it finishes, with the server's limits, the client's CPU
time and the validity verdict. `resume` skips the levels a run already finished validly and
measures invalid ones again. A level in which no request succeeded, or a server that reports
another deployment than the one the run checked, ends the run as failed, keeping the
finished levels.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from repro.bench.arrivals import (
    ArrivalPlan,
    arrival_plan,
    level_seed,
    rate_schedule,
    trace_schedule,
)
from repro.bench.client.result import RequestResult
from repro.bench.client.stream import StreamClient
from repro.bench.client.wire import chat_body, generate_body
from repro.bench.conversation import conversation_run
from repro.bench.lengthlevel import length_levels
from repro.bench.metrics import request_row
from repro.bench.observer import LevelObserver, LevelPlan, build_level
from repro.bench.options import BenchOptions
from repro.bench.prompts.chattemplate import ChatTemplate
from repro.bench.prompts.datasets import PromptSet
from repro.bench.prompts.sets import bench_prompts
from repro.bench.prompts.trace import Trace, trace_text, trace_tokens
from repro.bench.session import ServerChanged
from repro.bench.sweeprecord import BENCH_THINKING, SweepPlan, resume_run, start_run
from repro.bench.target import BenchTarget
from repro.errors import ReproError
from repro.schema.forced import ForcedAcceptance
from repro.schema.level import Level, Load
from repro.schema.recipe import Bench
from repro.schema.record import ClientLimits

__all__ = ["BenchOptions", "BenchResult", "SweepObserver", "run_bench"]


class SweepObserver(Protocol):
    """Structured events as a sweep runs: a level starts, a request finishes, a level's summary.

    Not a `repro.progress.Progress` (lines of text): callers count and aggregate these (a
    progress bar per level, a line per summary), so they carry data, not wording.
    """

    def level_started(self, load: Load, repeat: int, total: int) -> None: ...
    def request_done(self, result: RequestResult) -> None: ...

    # optional: `warmup_started(load, repeat, total)`, before a level's warm-up
    # requests, whose request_done then arrive too
    def level_done(self, summary: Level) -> None: ...


@dataclass
class BenchResult:
    run_dir: Path
    status: str
    levels: list[Level] = field(default_factory=list)
    error: str | None = None
    forced: ForcedAcceptance | None = None  # the acceptance is SGLANG_SIMULATE_ACC_LEN's
    bench: Bench | None = None  # the plan the run measured (its SLO search, its ladder)


def _bodies(
    bench: Bench,
    source: PromptSet | None,
    endpoint: str,
    model: str,
    n: int,
    seed: int,
    template: ChatTemplate | None,
) -> list[bytes]:
    """Chat: the user turns, the server applies its template with the switch this client
    would render (`chat_template_kwargs`); generate: the turns rendered here."""
    out_len = bench.output_len
    if endpoint == "chat":
        kwargs = template.kwargs(BENCH_THINKING) if template else None
        return [
            chat_body(model, [{"role": "user", "content": p}], out_len, temperature=0.0,
                      ignore_eos=True, chat_template_kwargs=kwargs)
            for p in bench_prompts(source, n, bench.input_len, seed=seed)
        ]  # fmt: skip
    prompts = bench_prompts(
        source, n, bench.input_len, seed=seed, template=template, thinking=BENCH_THINKING
    )
    return [generate_body(p, out_len, temperature=0.0, ignore_eos=True) for p in prompts]


def _plan_bodies(plan: SweepPlan, n: int, seed: int) -> list[bytes]:
    return _bodies(plan.bench, plan.source, plan.endpoint, plan.model, n, seed, plan.template)


@dataclass
class _Offer:
    """One level's requests as sent: bodies, their send times (None: closed loop), the cap
    in flight, the most tokens any asks for, and how the level was offered."""

    bodies: list[bytes]
    schedule: list[float] | None
    concurrency: int
    max_tokens: int
    arrival: ArrivalPlan | None


def _trace_bodies(plan: SweepPlan, trace: Trace, n: int) -> tuple[list[bytes], int]:
    """The trace's first `n` requests, with their own lengths: token ids on /generate, one
    word per id on chat (repro.bench.prompts.trace); and the longest output asked."""
    requests = trace.first(n)
    if plan.endpoint == "chat":
        bodies = [
            chat_body(plan.model, [{"role": "user", "content": trace_text(r, i)}],
                      r.output_length, temperature=0.0, ignore_eos=True)
            for i, r in enumerate(requests)
        ]  # fmt: skip
    else:
        bodies = [
            generate_body(trace_tokens(r, i), r.output_length, temperature=0.0, ignore_eos=True)
            for i, r in enumerate(requests)
        ]
    return bodies, max(r.output_length for r in requests)


def _offer(plan: SweepPlan, load: Load, seed: int) -> _Offer:
    bench = plan.bench
    n = bench.level_prompts(load)
    arrival = arrival_plan(bench, load)
    if arrival is None:
        bodies = _plan_bodies(plan, n, seed)
        return _Offer(bodies, None, int(load.value), bench.output_len, None)
    cap = arrival.max_concurrency
    if arrival.mode == "trace":
        assert plan.trace is not None  # sweeprecord loads the plan's trace
        bodies, longest = _trace_bodies(plan, plan.trace, n)
        times = [r.timestamp_ms for r in plan.trace.first(n)]
        schedule = trace_schedule(times, arrival.speedup)
        return _Offer(bodies, schedule, cap or len(bodies), longest, arrival)
    bodies = _plan_bodies(plan, n, seed)
    schedule = rate_schedule(n, load.value, arrival.burstiness, seed)
    return _Offer(bodies, schedule, cap or len(bodies), bench.output_len, arrival)


def run_bench(
    target: BenchTarget | None, opts: BenchOptions, progress: SweepObserver | None = None
) -> BenchResult:
    """Run a sweep against `target`, or resume `opts.resume` (target None: the run's own);
    returns the run folder and its status."""
    if opts.resume:
        plan = resume_run(opts)
    elif target is not None:
        plan = start_run(target, opts)
    else:
        raise ReproError(
            "nothing to measure", hint="give a RECIPE, a server --url, or --resume RUN"
        )
    record = plan.record
    try:
        error = plan.session.call(_sweep(plan, opts, progress))
    except BaseException as exc:  # Ctrl-C or a bug: the finished levels stay, resumable
        record.finish("failed", f"{type(exc).__name__}: {exc}")
        raise
    if error:
        record.finish("failed", error)
    else:
        record.finish("complete")
    forced = record.run.forced_acceptance
    return BenchResult(record.dir, record.run.status, record.levels, error, forced, plan.bench)


async def _sweep(plan: SweepPlan, opts: BenchOptions, progress: SweepObserver | None) -> str | None:
    """Every level still to measure; the run's error, or None."""
    record, bench = plan.record, plan.bench
    limits = record.run.client_limits or ClientLimits()
    out_len = bench.output_len
    observer = LevelObserver(plan.session, opts.metrics_interval)
    client = StreamClient.limited(plan.url, plan.endpoint, limits, max_accept=plan.max_accept)
    async with client:
        for load, repeat in plan.levels():
            seed = level_seed(load, repeat)
            offer = _offer(plan, load, seed)
            if bench.warmup:
                warm = _plan_bodies(plan, bench.warmup, seed + 7_000_000)
                shown = getattr(progress, "warmup_started", None)  # optional in the protocol
                if shown is not None:
                    shown(load, repeat, len(warm))
                await client.run(
                    warm,
                    min(offer.concurrency, len(warm)),
                    repeat=repeat,
                    max_tokens=out_len,
                    on_done=progress.request_done if shown is not None and progress else None,
                )
            talk = conversation_run(plan, load, seed)
            planned = talk.requests if talk else len(offer.bodies)
            if progress:
                progress.level_started(load, repeat, planned)
            on_done = progress.request_done if progress else None
            try:
                if talk and talk.cache == "flushed":
                    await plan.session.flush_cache()
                seen = await observer.watch(
                    talk.run(client, offer.concurrency, repeat=repeat, on_done=on_done)
                    if talk
                    else client.run(
                        offer.bodies,
                        offer.concurrency,
                        repeat=repeat,
                        schedule=offer.schedule,
                        on_done=on_done,
                        max_tokens=offer.max_tokens,
                    )
                )
            except ServerChanged as exc:
                return exc.message
            results = seen.run.results
            if not any(r.ok for r in results):
                failed = Counter(r.error_kind or "unknown" for r in results)
                kinds = ", ".join(f"{k}: {v}" for k, v in sorted(failed.items()))
                sample = next((r.error for r in results if r.error), "")
                return (
                    f"every request of level {load.stem}-r{repeat} failed ({kinds}); "
                    f"first error: {sample}"
                )
            level = build_level(
                seen,
                LevelPlan(
                    offer.concurrency, repeat, planned, offer.arrival, plan.gpus,
                    record.run.slos, record.run.max_failed_pct, record.run.gpu_hour_usd,
                ),
            )  # fmt: skip
            level.by_length = length_levels(results, bench.length_buckets)
            if talk:
                level.conversation = talk.stats(results)
            rows = talk.rows(results) if talk else (request_row(r) for r in results)
            record.add_level(level, rows, seen.samples)
            if progress:
                progress.level_done(level)
    return None
