"""Opening a sweep's run record, new or resumed, as the `SweepPlan` the sweep runs: the bench
plan after CLI overrides, the server checked to be the target's (identity.py), the chat
template at the pinned commit, the client's limits, and the files a run folder starts with
(run.json, recipe.json, lock.json, server_info.json, machine.json). A resumed run must find
the server it started with and the same prompts (and trace).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from pydantic import ValidationError

from repro.bench.arrivals import check_schedules, planned_loads
from repro.bench.forced import run_forced_acceptance
from repro.bench.identity import check_same_server
from repro.bench.opening import open_server
from repro.bench.options import BenchOptions
from repro.bench.plausible import max_accept_length
from repro.bench.prompts.chattemplate import ChatTemplate, recipe_template
from repro.bench.prompts.datasets import PromptSet
from repro.bench.prompts.lengths import interleaved_by_length
from repro.bench.prompts.sets import bench_source
from repro.bench.prompts.trace import Trace, load_trace
from repro.bench.record import RunWriter
from repro.bench.server import served_model
from repro.bench.session import ServerSession
from repro.bench.slo import searched_concurrencies
from repro.bench.target import BenchTarget
from repro.bench.validity import DEFAULT_MAX_FAILED_PCT
from repro.errors import ReproError
from repro.runfolder import RunFolder, new_run_dir, utc_now
from repro.schema.buckets import parse_buckets
from repro.schema.dataset import HubSource, PromptSource, bench_dataset_problem
from repro.schema.level import Load, closed
from repro.schema.recipe import Bench
from repro.schema.record import (
    BenchRunInfo,
    BenchWorkload,
    Endpoint,
)
from repro.schema.recordedrecipe import RecordedRecipe
from repro.schema.serverinfo import ServerInfo
from repro.schema.validation import first_problem

# `repro bench` measures without thinking, on both endpoints (the record says which switch)
BENCH_THINKING = False


@dataclass
class SweepPlan:
    """What a sweep sends and where it writes: the run record, the bench plan, the served
    model's name (as requests name it), the prompts and template, the GPUs the recipe declares
    (0: none, for per-GPU numbers), the run's server session (its identity pinned), the most
    tokens a verify step can commit on that server, the trace a replay sends (None: none),
    and the (load, repeat) levels still to measure."""

    record: RunWriter
    bench: Bench
    model: str
    source: PromptSet | None
    template: ChatTemplate | None
    gpus: int
    session: ServerSession
    max_accept: int
    trace: Trace | None = None
    todo: list[tuple[Load, int]] = field(init=False)

    def __post_init__(self) -> None:
        done = self.record.kept()
        self.todo = [
            (load, r)
            for r in range(self.bench.repeats)
            for load in planned_loads(self.bench)
            if (load, r) not in done
        ]

    def levels(self) -> Iterator[tuple[Load, int]]:
        """The (load, repeat) levels to measure: what is still to do of the ladder, then the
        SLO search's concurrencies one at a time, each chosen from every level so far."""
        yield from self.todo
        for found in searched_concurrencies(lambda: self.record.levels, self.bench):
            for repeat in range(self.bench.repeats):
                yield closed(found), repeat

    @property
    def url(self) -> str:
        return self.record.run.server_url or ""

    @property
    def endpoint(self) -> Endpoint:
        return self.record.run.endpoint or "generate"


def _workload(
    bench: Bench, source: PromptSet | None, template: ChatTemplate | None, trace: Trace | None
) -> BenchWorkload:
    open_loop = bench.request_rate is not None or trace is not None
    return BenchWorkload(
        input_len=bench.input_len,
        output_len=bench.output_len,
        dataset=bench.dataset,
        prompts_per_level=bench.prompts_per_level,
        prompts_per_concurrency=bench.prompts_per_concurrency,
        warmup=bench.warmup,
        repeats=bench.repeats,
        request_rate=bench.request_rate,
        burstiness=bench.burstiness if bench.request_rate is not None else None,
        max_concurrency=bench.max_concurrency if open_loop else None,
        trace=bench.trace,
        trace_speedup=bench.trace_speedup if trace is not None else None,
        trace_source=trace.source if trace is not None else None,
        dataset_source=source.source if source else None,
        chat_template=template.describe(BENCH_THINKING) if template else None,
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


def _by_length(source: PromptSet | None, bench: Bench) -> PromptSet | None:
    """The prompts in the plan's length buckets, from each in turn (all without buckets)."""
    if bench.length_buckets is None:
        return source
    if source is None:
        raise ReproError(
            "--length-buckets chooses a dataset's prompts by length; random prompts are "
            "--input-len words",
            hint="give a dataset (e.g. --dataset longbench-v2), or drop --length-buckets",
        )
    return interleaved_by_length(source, parse_buckets(bench.length_buckets, "--length-buckets"))


def _needs_template(endpoint: str, source: PromptSet | None, bench: Bench) -> bool:
    """Random words go to /generate as they are; everything else is chat-formatted (by the
    client on /generate, by the server on chat, where the template's switch is sent), and so
    is every conversation (its turns are messages)."""
    return endpoint == "chat" or source is not None or bench.conversation is not None


def _overridden(bench: Bench, opts: BenchOptions) -> Bench:
    """The recipe's bench plan with the CLI's options, checked as a whole: a level kind given
    on the command line (concurrencies, rates, a trace) replaces the recipe's."""
    overrides = {
        "concurrencies": opts.concurrencies,
        "input_len": opts.input_len,
        "output_len": opts.output_len,
        "dataset": opts.dataset,
        "prompts_per_level": opts.prompts,
        "prompts_per_concurrency": opts.prompts_per_concurrency,
        "request_rate": opts.request_rates,
        "burstiness": opts.burstiness,
        "max_concurrency": opts.max_concurrency,
        "trace": opts.trace,
        "trace_speedup": opts.trace_speedups,
        "slo_search": opts.slo_search,
        "conversation": opts.conversation,
        "length_buckets": (
            ",".join(b.label for b in opts.length_buckets) if opts.length_buckets else None
        ),
    }
    data = bench.model_dump() | {k: v for k, v in overrides.items() if v is not None}
    if opts.concurrencies is not None or opts.trace is not None:
        data["request_rate"] = opts.request_rates
    if opts.concurrencies is not None or opts.request_rates is not None:
        data["trace"] = opts.trace
    if opts.request_rates is not None or opts.trace is not None:
        data["slo_search"] = opts.slo_search  # it bisects concurrencies
    if data["prompts_per_level"] < 1 or not data["concurrencies"]:
        raise ReproError(
            "the dataset is empty: nothing to send",
            hint="give --prompts >= 1 and at least one --concurrency level",
        )
    try:
        return Bench.model_validate(data)
    except ValidationError as err:
        raise ReproError(
            f"the bench plan: {first_problem(err)}", hint="see `repro bench --help`"
        ) from None


def _trace(bench: Bench, recorded: PromptSource | None = None) -> Trace | None:
    """The trace a plan replays; on resume, the one the run started with (a Hub trace at its
    recorded commit, a file only when its content is unchanged)."""
    if bench.trace is None:
        return None
    if isinstance(recorded, HubSource):
        return load_trace(recorded.pinned, limit=bench.prompts_per_level)
    trace = load_trace(bench.trace, limit=bench.prompts_per_level)
    if recorded is not None and recorded.identity() != trace.source.identity():
        raise ReproError(
            f"trace {bench.trace} changed since the run started (sha256 differs)",
            hint="restore the file, or start a new run",
        )
    return trace


def start_run(target: BenchTarget, opts: BenchOptions) -> SweepPlan:
    """A new run record (recipe.json holds the bench plan after CLI overrides)."""
    bench = _overridden(target.bench, opts)
    source = _by_length(_source(bench.dataset), bench)  # fails before the server is asked
    trace = _trace(bench)  # so does a bad trace
    check_schedules(bench, [r.timestamp_ms for r in trace.requests] if trace else ())
    url = (opts.url or target.server_url()).rstrip("/")
    server = open_server(target, url, opts.provenance)  # fails before any folder is made
    forced = run_forced_acceptance(target.recipe, opts.forced, server.info)
    template = None
    if _needs_template(opts.endpoint, source, bench):
        template = server.template(opts.chat_template_fallback)
    run_dir = new_run_dir(target.name, opts.output, opts.runs_dir)
    record = RunWriter.create(
        run_dir,
        BenchRunInfo(
            run_id=run_dir.name,
            recipe_name=target.name,
            status="running",
            simulated=server.simulated,
            started_at=utc_now(),
            server_url=url,
            endpoint=opts.endpoint,
            workload=_workload(bench, source, template, trace),
            server_identity=server.identity,
            slos=opts.slos,
            max_failed_pct=(
                DEFAULT_MAX_FAILED_PCT if opts.max_failed_pct is None else opts.max_failed_pct
            ),
            gpu_hour_usd=target.gpu_hour_usd if opts.gpu_hour_usd is None else opts.gpu_hour_usd,
            client_limits=opts.client_limits(),
            forced_acceptance=forced,
        ),
    )
    record.folder.write_recipe(target.recorded(bench))
    if target.lock is not None:
        record.folder.write_lock(target.lock)
    record.folder.write_server_info(server.recorded_info())
    if opts.provenance.machine is not None:
        record.folder.write_machine(opts.provenance.machine)
    return SweepPlan(
        record, bench, served_model(server.info), source, template, target.gpus,
        server.session, server.max_accept, trace,
    )  # fmt: skip


def _resumed_source(record: RunWriter, dataset: str) -> PromptSet | None:
    """The prompts the run started with: a Hub dataset at its recorded commit; a file only
    when its content is unchanged."""
    recorded = record.run.workload.dataset_source
    if isinstance(recorded, HubSource):
        return bench_source(recorded.pinned)
    source = bench_source(dataset)
    if source and recorded and recorded.identity() != source.source.identity():
        raise ReproError(
            f"{dataset} changed since {record.dir} started (sha256 differs)",
            hint="restore the file, or start a new run",
        )
    return source


def _resumed_template(
    record: RunWriter,
    recorded: RecordedRecipe,
    info: ServerInfo,
    source: PromptSet | None,
    bench: Bench,
) -> ChatTemplate | None:
    """The template the run started with: the same file at the same commit, the fallback
    only when the run used it (runs recorded before templates were kept may fall back)."""
    if not _needs_template(record.run.endpoint or "generate", source, bench):
        return None
    used = record.run.workload.chat_template
    return recipe_template(
        recorded.model, record.folder.read_lock(), info, simulated=record.run.simulated,
        fallback=used is None or used.fallback is not None,
    )  # fmt: skip


def _recorded_plan(folder: RunFolder) -> tuple[RecordedRecipe, Bench]:
    """The run's recipe.json and the bench plan it measures."""
    recorded = folder.read_recipe()
    try:
        return recorded, Bench.model_validate(recorded.bench)
    except ValidationError as err:
        raise ReproError(
            f"{folder.recipe_file}: {first_problem(err, ('bench',))}", hint="is this a bench run?"
        ) from None


def resume_run(opts: BenchOptions) -> SweepPlan:
    assert opts.resume is not None
    record = RunWriter.open(opts.resume)
    resolved, bench = _recorded_plan(record.folder)
    if isinstance(record.run.workload.request_rate, float):
        raise ReproError(
            f"{opts.resume} sent Poisson arrivals at every concurrency, as repro did before "
            "request-rate levels: its plan does not resume as one",
            hint="start a new run (--request-rate sweeps rates, --max-concurrency caps them)",
        )
    if opts.dataset is not None and opts.dataset != bench.dataset:
        raise ReproError(
            f"{opts.resume} measures dataset {bench.dataset!r}, not {opts.dataset!r}",
            hint="resume without --dataset, or start a new run",
        )
    source = _by_length(_resumed_source(record, bench.dataset), bench)
    trace = _trace(bench, record.run.workload.trace_source)
    if opts.url:
        record.run.server_url = opts.url.rstrip("/")
    recorded = record.run.slos
    if opts.slos is not None and opts.slos != recorded and record.finished():
        raise ReproError(
            f"{opts.resume} has levels measured with the SLOs {recorded}, not {opts.slos}",
            hint="resume without --slo (the run's own SLOs apply), or start a new run",
        )
    record.run.slos = opts.slos or recorded
    if opts.max_failed_pct is not None:
        record.run.max_failed_pct = opts.max_failed_pct
    if opts.gpu_hour_usd is not None:
        record.run.gpu_hour_usd = opts.gpu_hour_usd
    record.run.client_limits = opts.client_limits(record.run.client_limits)
    session = ServerSession(record.run.server_url or "")
    info = session.call(session.server_info())
    check_same_server(session.url, info, record.run.server_identity)
    session.pin(info)
    template = _resumed_template(record, resolved, info, source, bench)
    record.run.status, record.run.finished_at, record.run.error = "running", None, None
    record.save_run()
    max_accept = max_accept_length(info.speculative_num_draft_tokens)
    return SweepPlan(
        record, bench, served_model(info), source, template, resolved.gpus, session, max_accept,
        trace,
    )  # fmt: skip
