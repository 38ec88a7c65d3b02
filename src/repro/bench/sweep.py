"""`repro bench`: a concurrency sweep against a running server, written as a run record.

`run_bench` measures a `BenchTarget` (repro.bench.target) or resumes a run, either way as
the `SweepPlan` sweeprecord.py opens. Each (concurrency, repeat) level runs its warmup
requests (not recorded), then `prompts_per_level` measured requests while the server's
`/metrics` is scraped; its per-request JSONL, its metrics series and the updated summary.json
are written as soon as it finishes, with the server's limits, the client's CPU time and the
validity verdict (validity.py). `resume` skips the levels a run already finished validly and
measures invalid ones again. A level in which no request succeeded ends the run as failed
(with the server's last log lines when repro launched it), keeping the finished levels.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from repro.bench.client.stream import RequestResult, StreamClient, measure
from repro.bench.client.wire import chat_body, generate_body
from repro.bench.energy import LevelMeter, usd_per_mtok
from repro.bench.metrics import request_row, summarize_level
from repro.bench.prompts.chattemplate import ChatTemplate
from repro.bench.prompts.datasets import PromptSet
from repro.bench.prompts.sets import bench_prompts
from repro.bench.provenance import Provenance
from repro.bench.server import (
    fetch_server_accept_length,
)
from repro.bench.serverstate import MetricsScraper, fetch_limits, server_state
from repro.bench.simclock import SimClockMeter
from repro.bench.sweeprecord import BENCH_THINKING, SweepPlan, resume_run, start_run
from repro.bench.target import BenchTarget
from repro.bench.validity import judge, offered_load
from repro.errors import ReproError
from repro.schema.forced import ForcedAcceptance
from repro.schema.level import Level
from repro.schema.recipe import Bench
from repro.schema.record import ClientLimits, Endpoint
from repro.schema.server import LevelEnergy, ServerState


class SweepObserver(Protocol):
    """Structured events as a sweep runs: a level starts, a request finishes, a level's summary.

    Not a `repro.progress.Progress` (lines of text): callers count and aggregate these (a
    progress bar per level, a line per summary), so they carry data, not wording.
    """

    def level_started(self, concurrency: int, repeat: int, total: int) -> None: ...
    def request_done(self, result: RequestResult) -> None: ...

    # optional: `warmup_started(concurrency, repeat, total)`, before a level's warm-up
    # requests, whose request_done then arrive too
    def level_done(self, summary: Level) -> None: ...


@dataclass
class BenchOptions:
    url: str | None = None
    concurrencies: list[int] | None = None
    input_len: int | None = None
    output_len: int | None = None
    dataset: str | None = None  # overrides recipe bench.dataset (repro.schema.dataset syntax)
    prompts: int | None = None
    endpoint: Endpoint = "generate"
    output: Path | None = None
    resume: Path | None = None
    runs_dir: Path = Path("runs")
    read_timeout: float | None = None  # these three: None for the run's own (new: defaults)
    request_timeout: float | None = None
    max_event_bytes: int | None = None
    slos: dict[str, float] | None = None
    max_failed_pct: float | None = None  # None: the run's own (new runs: 1%)
    metrics_interval: float = 0.5  # s between scrapes of the server's /metrics
    gpu_hour_usd: float | None = None  # overrides the recipe's cost.gpu_hour_usd
    chat_template_fallback: bool = False  # the built-in ChatML when the model's is missing
    forced: ForcedAcceptance | None = None  # what the server was launched with (--url runs)
    provenance: Provenance = field(default_factory=Provenance)  # machine.json, image


@dataclass
class BenchResult:
    run_dir: Path
    status: str
    levels: list[Level] = field(default_factory=list)
    error: str | None = None
    forced: ForcedAcceptance | None = None  # the acceptance is SGLANG_SIMULATE_ACC_LEN's


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
        error = measure(_sweep(plan, opts, progress))
    except BaseException as exc:  # Ctrl-C or a bug: the finished levels stay, resumable
        record.finish("failed", f"{type(exc).__name__}: {exc}")
        raise
    if error:
        record.finish("failed", error)
    else:
        record.finish("complete")
    forced = record.run.forced_acceptance
    return BenchResult(record.dir, record.run.status, record.levels, error, forced)


async def _sweep(plan: SweepPlan, opts: BenchOptions, progress: SweepObserver | None) -> str | None:
    record, bench, url, gpus = plan.record, plan.bench, plan.url, plan.gpus
    limits = record.run.client_limits or ClientLimits()
    out_len = bench.output_len
    async with StreamClient.limited(url, plan.endpoint, limits) as client:
        for concurrency, repeat in plan.todo:
            seed = concurrency * 1009 + repeat
            if bench.warmup:
                warm = _plan_bodies(plan, bench.warmup, seed + 7_000_000)
                shown = getattr(progress, "warmup_started", None)  # optional in the protocol
                if shown is not None:
                    shown(concurrency, repeat, len(warm))
                await client.run(
                    warm,
                    min(concurrency, len(warm)),
                    repeat=repeat,
                    max_tokens=out_len,
                    on_done=progress.request_done if shown is not None and progress else None,
                )
            n = bench.prompts_per_level
            bodies = _plan_bodies(plan, n, seed)
            if progress:
                progress.level_started(concurrency, repeat, len(bodies))
            server_limits = await fetch_limits(url)
            scraper = MetricsScraper(url, opts.metrics_interval)
            scraper.start()
            meter = LevelMeter(url)
            await meter.start()
            clock = SimClockMeter(url)
            await clock.start()
            cpu0 = time.process_time()
            run = await client.run(
                bodies,
                concurrency,
                repeat=repeat,
                request_rate=bench.request_rate,
                seed=seed,
                on_done=progress.request_done if progress else None,
                max_tokens=out_len,
            )
            cpu = time.process_time() - cpu0
            sim_clock = await clock.stop()
            energy = await meter.stop()
            samples = await scraper.stop()
            summary = summarize_level(
                run.results,
                concurrency=concurrency,
                repeat=repeat,
                duration=run.duration,
                gpus=gpus,
                slos=opts.slos,
                server_accept_length=await fetch_server_accept_length(url),
            )
            if summary.completed == 0:
                kinds = ", ".join(f"{k}: {v}" for k, v in summary.errors.items())
                sample = next((r.error for r in run.results if r.error), "")
                return (
                    f"every request of level c{concurrency}-r{repeat} failed ({kinds}); "
                    f"first error: {sample}"
                )
            summary = _judged(
                summary.model_copy(update={"sim_clock": sim_clock}),
                server_state(server_limits, samples, scraper.available),
                cpu,
                offered_load(summary, n, bench.request_rate is None),
                record.run.max_failed_pct,
                implausible_reason(run.results),
            )
            summary = _with_energy(summary, energy, gpus, record.run.gpu_hour_usd)
            record.add_level(summary, (request_row(r) for r in run.results), samples)
            if progress:
                progress.level_done(summary)
    return None


def implausible_reason(results: list[RequestResult]) -> str | None:
    """Why a level whose server sent malformed responses or values no server can send is
    invalid, however few."""
    bad = [r for r in results if r.error_kind in ("implausible", "protocol")]
    if not bad:
        return None
    return (
        f"{len(bad)} of {len(results)} responses were malformed or held values no server "
        f"can send (first: {bad[0].error})"
    )


def _judged(
    summary: Level,
    server: ServerState,
    cpu_s: float,
    offered: int | None,
    max_failed_pct: float,
    implausible: str | None = None,
) -> Level:
    """The level with the server's state, the client's CPU time and the verdict."""
    per_s = cpu_s / summary.duration if summary.duration > 0 else None
    level = summary.model_copy(
        update={"server": server, "client_cpu_s": cpu_s, "client_cpu_per_s": per_s}
    )
    level.reasons = judge(level, offered=offered, max_failed_pct=max_failed_pct)
    if implausible:
        level.reasons.append(implausible)
    level.valid = not level.reasons
    return level


def _with_energy(level: Level, energy: LevelEnergy, gpus: int, gpu_hour_usd: float | None) -> Level:
    """The level with its energy readings, joules per output token and dollars per Mtok
    (the recipe's GPU count, else the GPUs the readings cover)."""
    tokens = level.total_output_tokens
    return level.model_copy(
        update={
            "energy": energy,
            "joules_per_output_token": energy.energy_j / tokens
            if energy.energy_j is not None and tokens
            else None,
            "mean_power_w": energy.mean_power_w,
            "usd_per_mtok": usd_per_mtok(
                gpus or energy.gpus, gpu_hour_usd, level.output_throughput
            ),
        }
    )
