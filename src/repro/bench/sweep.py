"""`repro bench`: a concurrency sweep against a running server, written as a run record.

Each (concurrency, repeat) level runs its warmup requests (not recorded), then
`prompts_per_level` measured requests while the server's `/metrics` is scraped; its
per-request JSONL, its metrics series and the updated summary.json are written as soon as it
finishes, with the server's limits, the client's CPU time and the validity verdict
(validity.py). `resume` skips the levels a run already finished validly and measures invalid
ones again. A level in which no request succeeded ends the run as failed (with the server's
last log lines when repro launched it), keeping the finished levels.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from repro.bench.chattemplate import ChatTemplate, recipe_template
from repro.bench.client import RequestResult, StreamClient, measure
from repro.bench.datasets import PromptSet
from repro.bench.energy import LevelMeter, usd_per_mtok
from repro.bench.identity import check_identity, check_same_server, found_identity, recipe_url
from repro.bench.metrics import request_row, summarize_level
from repro.bench.prompts import bench_prompts, bench_source
from repro.bench.provenance import Provenance
from repro.bench.record import (
    RunWriter,
    new_run_dir,
    read_json,
    utc_now,
    write_model,
    write_server_log,
)
from repro.bench.server import (
    fetch_server_accept_length,
    fetch_server_info,
    is_simulated,
    served_model,
    server_info_record,
)
from repro.bench.serverstate import MetricsScraper, fetch_limits, server_state
from repro.bench.simclock import SimClockMeter
from repro.bench.validity import DEFAULT_MAX_FAILED_PCT, judge, offered_load
from repro.bench.wire import chat_body, generate_body
from repro.errors import ReproError
from repro.spec.dataset import bench_dataset_problem
from repro.spec.lock import Lock
from repro.spec.record import BenchRunInfo, BenchWorkload, ClientLimits, Endpoint, Level
from repro.spec.server import LevelEnergy, ServerState


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
    dataset: str | None = None  # overrides recipe bench.dataset (repro.spec.dataset syntax)
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
    collect_machine: bool = True
    server_log: Callable[[], list[str]] | None = None  # default: provenance.server_log
    provenance: Provenance = field(default_factory=Provenance)


@dataclass
class BenchResult:
    run_dir: Path
    status: str
    levels: list[Level] = field(default_factory=list)
    error: str | None = None


# `repro bench` measures without thinking, on both endpoints (the record says which switch)
BENCH_THINKING = False


def _workload(
    bench: dict[str, Any], source: PromptSet | None, template: ChatTemplate | None
) -> BenchWorkload:
    return BenchWorkload(
        input_len=bench["input_len"],
        output_len=bench["output_len"],
        dataset=bench["dataset"],
        prompts_per_level=bench["prompts_per_level"],
        warmup=bench["warmup"],
        repeats=bench["repeats"],
        request_rate=bench.get("request_rate"),
        dataset_source=source.source if source else None,
        chat_template=template.describe(BENCH_THINKING) if template else None,
    )


def _limits(opts: BenchOptions, recorded: ClientLimits | None) -> ClientLimits:
    """The client's limits: the options given, else the run's own, else the defaults."""
    given = {
        "read_timeout_s": opts.read_timeout,
        "request_timeout_s": opts.request_timeout,
        "max_event_bytes": opts.max_event_bytes,
    }
    return (recorded or ClientLimits()).model_copy(
        update={k: v for k, v in given.items() if v is not None}
    )


def _source(dataset: str) -> PromptSet | None:
    problem = bench_dataset_problem(dataset)
    if problem:
        raise ReproError(
            f"--dataset: {problem}",
            hint="e.g. --dataset chat, --dataset prompts.jsonl or "
            "--dataset hf:openai/gsm8k/main:question",
        )
    return bench_source(dataset)


Started = tuple[RunWriter, dict[str, Any], str, PromptSet | None, ChatTemplate | None]


def _needs_template(endpoint: str, source: PromptSet | None) -> bool:
    """Random words go to /generate as they are; everything else is chat-formatted (by the
    client on /generate, by the server on chat, where the template's switch is sent)."""
    return endpoint == "chat" or source is not None


def _start(recipe: Any, opts: BenchOptions) -> Started:
    """A new run record (recipe.json holds the bench plan after CLI overrides)."""
    bench = recipe.bench.model_dump(mode="json")
    overrides = {
        "concurrencies": opts.concurrencies,
        "input_len": opts.input_len,
        "output_len": opts.output_len,
        "dataset": opts.dataset,
        "prompts_per_level": opts.prompts,
    }
    bench.update({k: v for k, v in overrides.items() if v is not None})
    if bench["prompts_per_level"] < 1 or not bench["concurrencies"]:
        raise ReproError(
            "the dataset is empty: nothing to send",
            hint="give --prompts >= 1 and at least one --concurrency level",
        )
    source = _source(bench["dataset"])  # a bad dataset fails before the server is asked
    resolved = recipe.model_dump(mode="json")
    resolved["bench"] = bench
    url = (opts.url or recipe_url(recipe, opts.provenance.deployment_port)).rstrip("/")
    info = asyncio.run(fetch_server_info(url))  # fails before any folder is made
    image = opts.provenance.running_image(url) or {}  # of a deployment repro launched there
    model = getattr(recipe, "model", None)  # None: --url alone, the server's model
    lock = opts.provenance.lock_of(recipe) if model else None
    if model is None:  # --url alone: record what answers
        identity = {"checked_against": None, "found": found_identity(info, image)}
    else:
        identity = check_identity(url, info, recipe, lock, image)
    simulated = recipe.simulator is not None or is_simulated(info)
    template = None
    if _needs_template(opts.endpoint, source):
        template = recipe_template(
            model, lock, info, simulated=simulated, fallback=opts.chat_template_fallback
        )
    server_info = server_info_record(url, info, **image, simulated=simulated)
    run_dir = new_run_dir(recipe.name, opts.output, opts.runs_dir)
    record = RunWriter.create(
        run_dir,
        BenchRunInfo(
            run_id=run_dir.name,
            recipe_name=recipe.name,
            status="running",
            simulated=simulated,
            started_at=utc_now(),
            server_url=url,
            endpoint=opts.endpoint,
            workload=_workload(bench, source, template),
            server_identity=identity,
            slos=opts.slos,
            max_failed_pct=(
                DEFAULT_MAX_FAILED_PCT if opts.max_failed_pct is None else opts.max_failed_pct
            ),
            gpu_hour_usd=_gpu_hour_usd(recipe, opts),
            client_limits=_limits(opts, None),
        ),
    )
    record.write("recipe.json", resolved)
    if lock is not None:
        record.write("lock.json", lock.model_dump(mode="json"))
    write_model(run_dir / "server_info.json", server_info, exclude_unset=True)
    if opts.collect_machine and opts.provenance.machine is not None:
        record.write("machine.json", opts.provenance.machine().model_dump(mode="json"))
    return record, resolved, served_model(info), source, template


def _resumed_source(record: RunWriter, dataset: str) -> PromptSet | None:
    """The prompts the run started with: a Hub dataset at its recorded commit; a file only
    when its content is unchanged."""
    recorded = record.run.workload.dataset_source or {}
    if recorded.get("kind") == "hub":
        return bench_source(recorded["pinned"])
    source = bench_source(dataset)
    if source and recorded.get("sha256") not in (None, source.source.get("sha256")):
        raise ReproError(
            f"{dataset} changed since {record.dir} started (sha256 differs)",
            hint="restore the file, or start a new run",
        )
    return source


def _resumed_template(
    record: RunWriter, resolved: dict[str, Any], info: dict[str, Any], source: PromptSet | None
) -> ChatTemplate | None:
    """The template the run started with: the same file at the same commit, the fallback
    only when the run used it (runs recorded before templates were kept may fall back)."""
    if not _needs_template(record.run.endpoint or "generate", source):
        return None
    recorded = record.run.workload.chat_template
    lock_path = record.dir / "lock.json"
    lock = Lock.model_validate(read_json(lock_path)) if lock_path.is_file() else None
    return recipe_template(
        resolved.get("model"), lock, info, simulated=record.run.simulated,
        fallback=recorded is None or recorded.get("fallback") is not None,
    )  # fmt: skip


def _resume(opts: BenchOptions) -> Started:
    assert opts.resume is not None
    record = RunWriter.open(opts.resume)
    resolved = read_json(opts.resume / "recipe.json")
    if opts.dataset is not None and opts.dataset != resolved["bench"]["dataset"]:
        raise ReproError(
            f"{opts.resume} measures dataset {resolved['bench']['dataset']!r}, not "
            f"{opts.dataset!r}",
            hint="resume without --dataset, or start a new run",
        )
    source = _resumed_source(record, resolved["bench"]["dataset"])
    if opts.url:
        record.run.server_url = opts.url.rstrip("/")
    recorded = record.run.slos
    if opts.slos is not None and opts.slos != recorded and record.finished():
        raise ReproError(
            f"{opts.resume} has levels measured with the SLOs {recorded}, not {opts.slos}",
            hint="resume without --slo (the run's own SLOs apply), or start a new run",
        )
    opts.slos = opts.slos or recorded
    record.run.slos = opts.slos
    if opts.max_failed_pct is not None:
        record.run.max_failed_pct = opts.max_failed_pct
    if opts.gpu_hour_usd is not None:
        record.run.gpu_hour_usd = opts.gpu_hour_usd
    record.run.client_limits = _limits(opts, record.run.client_limits)
    info = asyncio.run(fetch_server_info(record.run.server_url or ""))
    check_same_server(record.run.server_url or "", info, record.run.server_identity)
    template = _resumed_template(record, resolved, info, source)
    record.run.status, record.run.finished_at, record.run.error = "running", None, None
    record.save_run()
    return record, resolved, served_model(info), source, template


def _bodies(
    bench: dict[str, Any],
    source: PromptSet | None,
    endpoint: str,
    model: str,
    n: int,
    seed: int,
    template: ChatTemplate | None,
) -> list[bytes]:
    """Chat: the user turns, the server applies its template with the switch this client
    would render (`chat_template_kwargs`); generate: the turns rendered here."""
    out_len = bench["output_len"]
    if endpoint == "chat":
        kwargs = template.kwargs(BENCH_THINKING) if template else None
        return [
            chat_body(model, [{"role": "user", "content": p}], out_len, temperature=0.0,
                      ignore_eos=True, chat_template_kwargs=kwargs)
            for p in bench_prompts(source, n, bench["input_len"], seed=seed)
        ]  # fmt: skip
    prompts = bench_prompts(
        source, n, bench["input_len"], seed=seed, template=template, thinking=BENCH_THINKING
    )
    return [generate_body(p, out_len, temperature=0.0, ignore_eos=True) for p in prompts]


def run_bench(
    recipe: Any, opts: BenchOptions, progress: SweepObserver | None = None
) -> BenchResult:
    """Run (or resume) a sweep; returns the run folder and its status."""
    started = _resume(opts) if opts.resume else _start(recipe, opts)
    record, resolved, model, source, template = started
    bench = resolved["bench"]
    gpus = int(resolved.get("topology", {}).get("gpus") or 0)
    endpoint = record.run.endpoint or "generate"
    url = record.run.server_url or ""
    done = record.kept()
    todo = [
        (c, r)
        for r in range(bench["repeats"])
        for c in bench["concurrencies"]
        if (c, r) not in done
    ]
    try:
        error = measure(
            _sweep(
                record, bench, source, todo, url, endpoint, model, template, gpus, opts, progress
            )
        )
    except BaseException as exc:  # Ctrl-C or a bug: the finished levels stay, resumable
        record.finish("failed", f"{type(exc).__name__}: {exc}")
        raise
    if error:
        _save_server_log(record, opts)
        record.finish("failed", error)
    else:
        record.finish("complete")
    return BenchResult(record.dir, record.run.status, record.levels, error)


async def _sweep(
    record: RunWriter,
    bench: dict[str, Any],
    source: PromptSet | None,
    todo: list[tuple[int, int]],
    url: str,
    endpoint: Endpoint,
    model: str,
    template: ChatTemplate | None,
    gpus: int,
    opts: BenchOptions,
    progress: SweepObserver | None,
) -> str | None:
    limits = record.run.client_limits or ClientLimits()
    out_len = bench["output_len"]
    async with StreamClient.limited(url, endpoint, limits) as client:
        for concurrency, repeat in todo:
            seed = concurrency * 1009 + repeat
            if bench["warmup"]:
                warm = _bodies(
                    bench, source, endpoint, model, bench["warmup"], seed + 7_000_000, template
                )
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
            n = bench["prompts_per_level"]
            bodies = _bodies(bench, source, endpoint, model, n, seed, template)
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
                request_rate=bench.get("request_rate"),
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
                offered_load(summary, n, bench.get("request_rate") is None),
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


def _gpu_hour_usd(recipe: Any, opts: BenchOptions) -> float | None:
    if opts.gpu_hour_usd is not None:
        return opts.gpu_hour_usd
    cost = getattr(recipe, "cost", None)
    return cost.gpu_hour_usd if cost is not None else None


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


def _save_server_log(record: RunWriter, opts: BenchOptions) -> None:
    try:
        if opts.server_log is not None:
            lines = opts.server_log()
        else:
            lines = opts.provenance.server_log(record.run.recipe_name)
    except Exception:  # the log is a courtesy: never mask the run's own error
        lines = []
    write_server_log(record.dir, lines)
