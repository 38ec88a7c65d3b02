"""The stage runner behind `repro run`.

`STAGES` is the pipeline, in order. Doctor runs first, so a GPU recipe on a machine without
GPUs stops at once, never after a Hub query, a long pull or a download. A plan is printed
first; each stage reports its duration; `stages.json` in the run directory records what
finished, so `--resume RUN` skips it. The exit code names the stage that failed (10 + its
index), and a Ctrl-C stops whatever repro started while keeping every result. With `url`
(a server a cluster started) the stages that check, build, start or stop a server here are
skipped, and a resume never relaunches it.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from repro.bench.arrivals import sweep_description
from repro.errors import ReproError
from repro.exitcodes import ExitCode
from repro.interrupts import (
    signal_name,
    signal_number,
    signals_as_interrupts,
    signals_ignored,
)
from repro.lock import require_checked
from repro.run.context import RunContext
from repro.run.simulate import simulated_recipe
from repro.run.stages import (
    stage_accept,
    stage_bench,
    stage_doctor,
    stage_fetch,
    stage_image,
    stage_launch,
    stage_lock,
    stage_report,
    stage_stop,
)
from repro.runfolder import RunFolder, fresh_run_dir
from repro.schema.record import StageRecord, StagesFile


@dataclass(frozen=True)
class Stage:
    """One stage of `repro run`: what it does, and the line the plan shows for it."""

    name: str
    run: Callable[[RunContext, Console], str]
    describe: Callable[[RunContext], str]


def _describe_doctor(ctx: RunContext) -> str:
    if ctx.simulated:
        return "check the engine (simulated: weight and GPU checks skipped)"
    return "check GPUs, topology, engine and disk against the recipe"


def _describe_lock(ctx: RunContext) -> str:
    if ctx.locked.lock is not None:
        return "use the lock as given"
    return "pin model, drafter, image and patches"


def _describe_fetch(ctx: RunContext) -> str:
    if ctx.simulated:
        return "nothing to download (simulated)"
    return f"download {ctx.recipe.model.repo} and drafter, after a disk check"


def _describe_accept(ctx: RunContext) -> str:
    if ctx.recipe.drafter is None:
        return "skipped: no drafter"
    return "acceptance length per prompt set"


# The order is the pipeline's: every list of stages (--from, exit codes, the plan) reads it.
STAGES: tuple[Stage, ...] = (
    Stage("doctor", stage_doctor, _describe_doctor),
    Stage("lock", stage_lock, _describe_lock),
    Stage("image", stage_image, lambda ctx: f"build or find the image of spec {ctx.recipe.image}"),
    Stage("fetch", stage_fetch, _describe_fetch),
    Stage(
        "launch",
        stage_launch,
        lambda _: "start the server with Docker Compose, wait for /health_generate",
    ),
    Stage("accept", stage_accept, _describe_accept),
    Stage("bench", stage_bench, lambda ctx: sweep_description(ctx.recipe.bench)),
    Stage("report", stage_report, lambda _: "table, HTML and plots"),
    Stage("stop", stage_stop, lambda _: "stop the server (kept with --keep)"),
)
STAGE_NAMES = [stage.name for stage in STAGES]


def exit_code_of(stage: str) -> int:
    return ExitCode.FIRST_STAGE + STAGE_NAMES.index(stage)


class StageFailed(ReproError):
    """A stage failed; the exit code names it (`exit_code_of`)."""

    def __init__(self, stage: str, cause: ReproError) -> None:
        super().__init__(f"stage {stage} failed: {cause.message}", hint=cause.hint)
        self.exit_code = exit_code_of(stage)
        self.stage = stage


@dataclass
class RunOptions:
    ref: str
    runs_dir: Path = Path("runs")
    dry_run: bool = False
    keep: bool = False
    from_stage: str | None = None
    resume: Path | None = None
    port: int | None = None
    sim: str | None = None  # run on the simulator: a profile name, or "" to choose one
    time_scale: float = 1.0  # the simulator's --time-scale, with sim
    url: str | None = None  # measure the server here (started by a cluster, not by repro)


@dataclass
class RunResult:
    run_dir: Path
    stages: list[StageRecord] = field(default_factory=list)


def run_pipeline(options: RunOptions, console: Console | None = None) -> RunResult:
    """Run (or plan, with dry_run) every stage for a recipe; see the module docstring. A new
    run that never starts a stage (a plan, a refused recipe or deployment) leaves no folder:
    neither its run folder nor the runs folder it made."""
    console = console or Console(stderr=True, highlight=False)
    fresh = _Fresh(options.runs_dir, options.resume is None)
    try:
        return _run_pipeline(options, console, fresh)
    except BaseException:
        if not fresh.started:
            fresh.forget()
        raise


@dataclass
class _Fresh:
    """What a new run made before its first stage, to remove when none starts."""

    runs_dir: Path
    new: bool  # not a --resume
    made_runs_dir: bool = False
    run_dir: Path | None = None
    started: bool = False
    announced: bool = False  # its folder, named once a stage ran in it

    def __post_init__(self) -> None:
        self.made_runs_dir = self.new and not self.runs_dir.exists()

    def forget(self) -> None:
        if not self.new:
            return
        if self.run_dir is not None:
            shutil.rmtree(self.run_dir, ignore_errors=True)
        if self.made_runs_dir:
            with suppress(OSError):  # kept when something else wrote there meanwhile
                self.runs_dir.rmdir()


def _run_pipeline(options: RunOptions, console: Console, fresh: _Fresh) -> RunResult:
    ref, run_dir = options.ref, None
    if options.sim is not None and options.resume is None:
        run_dir = fresh.run_dir = fresh_run_dir(options.runs_dir, f"{Path(options.ref).stem}-sim")
        sim_recipe = simulated_recipe(ref, run_dir, options.sim or None, options.time_scale)
        ref = str(sim_recipe)
    ctx = RunContext.create(ref, options.resume, options.runs_dir, options.port, run_dir)
    fresh.run_dir = ctx.run_dir
    if options.url is not None:
        ctx.url, ctx.external = options.url, True
    records = (
        _load_records(ctx.run_dir) if options.resume else [StageRecord(name=s) for s in STAGE_NAMES]
    )
    if ctx.external:
        for record in records:
            if record.name in NOT_WITH_URL and record.status == "pending":
                record.status, record.summary = "skipped", f"--url: {ctx.url} is not repro's"
    elif options.resume:
        _relaunch_if_needed(ctx, records, options.port)
    if options.dry_run:
        require_checked(ctx.locked)  # a plan only for a recipe `repro recipe check` accepts
    start_index = STAGE_NAMES.index(options.from_stage) if options.from_stage else 0
    _print_plan(ctx, records, start_index, console, fresh.new)
    if options.dry_run:
        for line in ctx.dry_run_commands():
            text = line if line.startswith("#") else f"$ {line}"
            console.print(text, soft_wrap=True, markup=False, emoji=False, highlight=False)
        fresh.forget()  # a plan leaves no run folder behind
        return RunResult(ctx.run_dir, records)
    # deferred: python_on_whales
    from repro.launch.claim import deployment_claim
    from repro.launch.deploy import deployment_dir

    # One repro at a time owns the recipe's deployment: a second run is refused here, before
    # any stage, never by a failing launch whose clean-up stops this run's server.
    with deployment_claim(deployment_dir(ctx.recipe.name), ctx.recipe.name):
        fresh.started = True
        return _run_stages(ctx, records, options, start_index, console, fresh)


def _run_stages(
    ctx: RunContext,
    records: list[StageRecord],
    options: RunOptions,
    start_index: int,
    console: Console,
    fresh: _Fresh,
) -> RunResult:
    ctx.keep = options.keep
    try:
        ctx.save()
        with signals_as_interrupts():
            for index, (stage, record) in enumerate(zip(STAGES, records, strict=True)):
                if index < start_index and record.status == "pending":
                    record.status, record.summary = "skipped", f"--from {options.from_stage}"
                    continue
                if index < start_index or record.status in ("done", "skipped"):
                    continue
                if record.name == "stop" and options.keep:
                    record.status, record.summary = "skipped", "--keep: the server stays up"
                    continue
                _run_stage(ctx, record, stage.run, console)
                _save_records(ctx.run_dir, records)
                if fresh.new and not fresh.announced:
                    fresh.announced = True
                    console.print(f"run folder: {escape(str(ctx.run_dir))}", emoji=False)
    except KeyboardInterrupt as interrupt:  # Ctrl-C, SIGTERM, SIGHUP
        name = signal_name(interrupt)
        console.print(f"[yellow]interrupted ({name})[/]: stopping what repro started; results kept")
        _clean_up(ctx, records, stop=True)
        error = ReproError(
            f"interrupted by {name}", hint=f"continue with `repro run --resume {ctx.run_dir}`"
        )
        error.exit_code = ExitCode.SIGNAL + signal_number(interrupt)
        raise error from None
    except OSError as err:  # the run folder itself cannot be written (full disk, permission)
        _clean_up(ctx, records, stop=not options.keep)
        raise machine_error(err, ctx.run_dir) from None
    except BaseException:  # a failed stage, or a bug: stop what this run started
        _clean_up(ctx, records, stop=not options.keep)
        if records[0].status == "failed":
            fresh.forget()  # this machine cannot run the recipe: nothing ran, nothing to keep
        raise
    return RunResult(ctx.run_dir, records)


def machine_error(err: OSError, run_dir: Path) -> ReproError:
    """An OSError (a full disk, a permission) as one line naming where, and what to do."""
    where = err.filename or f"writing under {run_dir}"
    return ReproError(
        f"{err.strerror or err} ({where})",
        hint=f"free disk space or fix the permission, then `repro run --resume {run_dir}`",
    )


def _clean_up(ctx: RunContext, records: list[StageRecord], stop: bool) -> None:
    """Stop the server this run started and keep the stage records, uninterrupted; a disk
    that is full by now does not hide the error that brought the run here."""
    with signals_ignored():
        if stop:
            with suppress(OSError):  # context.json may not fit on the disk any more
                ctx.stop_server()
        with suppress(OSError):
            _save_records(ctx.run_dir, records)


# Stages that talk to the running server.
SERVER_STAGES = ("accept", "bench")
# Stages a run with --url skips: that server's machine, image and life are not repro's.
NOT_WITH_URL = ("doctor", "image", "fetch", "launch", "stop")


def _relaunch_if_needed(ctx: RunContext, records: list[StageRecord], port: int | None) -> None:
    """A resumed run whose server stopped (Ctrl-C, a crash) launches it again first, on
    `port` when given; a server still up on another port is refused, not silently kept."""
    pending = [r for r in records if r.name in SERVER_STAGES and r.status != "done"]
    launch = next(r for r in records if r.name == "launch")
    if pending and launch.status == "done" and not ctx.owns_running_server():
        launch.status, launch.summary = "pending", "relaunch: this run's server is not running"
        ctx.deployment, ctx.url, ctx.container_id = None, None, None
    if port is not None and port != (ctx.port or ctx.recipe.server.port):
        if ctx.owns_running_server():
            raise ReproError(
                f"the server of {ctx.run_dir} is up at {ctx.url}, not on port {port}",
                hint=f"resume without --port, or stop it first: `repro stop {ctx.deployment}`",
            )
        ctx.port = port
    stop = next(r for r in records if r.name == "stop")
    if launch.status != "done":
        stop.status = "pending"


def _run_stage(
    ctx: RunContext,
    record: StageRecord,
    function: Callable[[RunContext, Console], str],
    console: Console,
) -> None:
    console.rule(f"[bold]{record.name}")
    started = time.monotonic()
    try:
        summary = function(ctx, console)
    except ReproError as err:
        record.status, record.seconds = "failed", time.monotonic() - started
        record.summary = err.message  # whole: a lock's every problem (the index shows it)
        raise StageFailed(record.name, err) from err
    except OSError as err:  # a full disk, a permission: the machine's, not the recipe's
        record.status, record.seconds = "failed", time.monotonic() - started
        cause = ReproError(
            f"{err.strerror or err}" + (f": {err.filename}" if err.filename else ""),
            hint=f"free disk space or fix the permission, then `repro run --resume {ctx.run_dir}`",
        )
        record.summary = cause.message
        raise StageFailed(record.name, cause) from err
    except KeyboardInterrupt as interrupt:
        record.status, record.seconds = "failed", time.monotonic() - started
        record.summary = f"interrupted ({signal_name(interrupt)})"
        raise
    record.status, record.summary = "done", summary
    record.seconds = time.monotonic() - started
    console.print(f"[green]✓[/] {record.name} ({record.seconds:.1f} s) {summary}")


def _print_plan(
    ctx: RunContext, records: list[StageRecord], start_index: int, console: Console, new: bool
) -> None:
    header = f"[bold]repro run[/] {escape(ctx.recipe.name)}"
    if not new:  # a new run's folder is named once a stage ran in it (a refused run has none)
        header += f" -> {escape(str(ctx.run_dir))}"
    console.print(header, emoji=False)
    for index, (stage, record) in enumerate(zip(STAGES, records, strict=True)):
        if index < start_index or record.status in ("done", "skipped"):
            mark = f"skip ({record.status})" if record.status != "pending" else "skip (--from)"
        else:
            mark = stage.describe(ctx)
        console.print(f"  {index + 1}. {record.name:<7} {escape(mark)}", emoji=False)


def _load_records(run_dir: Path) -> list[StageRecord]:
    stages = RunFolder(run_dir).read_stages()
    if stages is None:  # the run stopped before its first stage ended: nothing is done
        return [StageRecord(name=name) for name in STAGE_NAMES]
    saved = {stage.name: stage for stage in stages.stages}
    return [saved.get(name) or StageRecord(name=name) for name in STAGE_NAMES]


def _save_records(run_dir: Path, records: list[StageRecord]) -> None:
    updated_at = datetime.now(UTC).isoformat(timespec="seconds")
    RunFolder(run_dir).write_stages(StagesFile(updated_at=updated_at, stages=records))
