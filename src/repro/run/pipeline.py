"""The stage runner behind `repro run`.

doctor -> lock -> image -> fetch -> launch -> accept -> bench -> report -> stop. Doctor runs
first, so a GPU recipe on a machine without GPUs stops at once, never after a Hub query, a
long pull or a download. A plan is
printed first; each stage reports its duration; `stages.json` in the run directory records
what finished, so `--resume RUN` skips it. The exit code names the stage that failed
(10 + its index), and a Ctrl-C stops whatever repro started while keeping every result.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError
from rich.console import Console

from repro.bench.record import read_json, write_model
from repro.errors import ReproError
from repro.run.context import RunContext
from repro.run.stages import STAGE_DESCRIPTIONS, STAGE_FUNCTIONS
from repro.spec.record import StageRecord, StagesFile, first_error

STAGES = ["doctor", "lock", "image", "fetch", "launch", "accept", "bench", "report", "stop"]
STAGES_FILE = "stages.json"


class StageFailed(ReproError):
    """A stage failed; the exit code is 10 + the stage's index."""

    def __init__(self, stage: str, cause: ReproError) -> None:
        super().__init__(f"stage {stage} failed: {cause.message}", hint=cause.hint)
        self.exit_code = 10 + STAGES.index(stage)
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


@dataclass
class RunResult:
    run_dir: Path
    stages: list[StageRecord] = field(default_factory=list)


def run_pipeline(options: RunOptions, console: Console | None = None) -> RunResult:
    """Run (or plan, with dry_run) every stage for a recipe; see the module docstring."""
    console = console or Console(stderr=True, highlight=False)
    ctx = RunContext.create(options.ref, options.resume, options.runs_dir, options.port)
    records = (
        _load_records(ctx.run_dir) if options.resume else [StageRecord(name=s) for s in STAGES]
    )
    if options.resume:
        _relaunch_if_needed(ctx, records)
    start_index = STAGES.index(options.from_stage) if options.from_stage else 0
    _print_plan(ctx, records, start_index, console)
    if options.dry_run:
        for line in ctx.dry_run_commands():
            text = line if line.startswith("#") else f"$ {line}"
            console.print(text, soft_wrap=True, markup=False, highlight=False)
        return RunResult(ctx.run_dir, records)
    ctx.keep = options.keep
    ctx.save()
    try:
        for index, record in enumerate(records):
            if index < start_index or record.status in ("done", "skipped"):
                continue
            if record.name == "stop" and options.keep:
                record.status, record.summary = "skipped", "--keep: the server stays up"
                continue
            _run_stage(ctx, record, STAGE_FUNCTIONS[record.name], console)
            _save_records(ctx.run_dir, records)
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]: stopping what repro started; results are kept")
        ctx.stop_server()
        _save_records(ctx.run_dir, records)
        hint = f"continue with `repro run --resume {ctx.run_dir}`"
        raise ReproError("interrupted", hint=hint) from None
    except StageFailed:
        if not options.keep:
            ctx.stop_server()
        _save_records(ctx.run_dir, records)
        raise
    return RunResult(ctx.run_dir, records)


# Stages that talk to the running server.
SERVER_STAGES = ("accept", "bench")


def _relaunch_if_needed(ctx: RunContext, records: list[StageRecord]) -> None:
    """A resumed run whose server stopped (Ctrl-C, a crash) launches it again first."""
    pending = [r for r in records if r.name in SERVER_STAGES and r.status != "done"]
    launch = next(r for r in records if r.name == "launch")
    if pending and launch.status == "done" and not ctx.server_is_up():
        launch.status, launch.summary = "pending", "relaunch: the server is not running"
        ctx.deployment, ctx.url = None, None
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
        record.summary = err.message.splitlines()[0]
        raise StageFailed(record.name, err) from err
    record.status, record.summary = "done", summary
    record.seconds = time.monotonic() - started
    console.print(f"[green]✓[/] {record.name} ({record.seconds:.1f} s) {summary}")


def _print_plan(
    ctx: RunContext, records: list[StageRecord], start_index: int, console: Console
) -> None:
    console.print(f"[bold]repro run[/] {ctx.recipe.name} -> {ctx.run_dir}")
    for index, record in enumerate(records):
        if index < start_index or record.status in ("done", "skipped"):
            mark = f"skip ({record.status})" if record.status != "pending" else "skip (--from)"
        else:
            mark = STAGE_DESCRIPTIONS[record.name](ctx)
        console.print(f"  {index + 1}. {record.name:<7} {mark}")


def _load_records(run_dir: Path) -> list[StageRecord]:
    path = run_dir / STAGES_FILE
    if not path.exists():
        raise ReproError(f"{run_dir} is not a repro run (no {STAGES_FILE})")
    try:
        saved = {stage.name: stage for stage in StagesFile.model_validate(read_json(path)).stages}
    except ValidationError as err:
        raise ReproError(
            f"{path}: {first_error(err)}", hint="is this a `repro run` folder?"
        ) from None
    return [saved.get(name) or StageRecord(name=name) for name in STAGES]


def _save_records(run_dir: Path, records: list[StageRecord]) -> None:
    updated_at = datetime.now(UTC).isoformat(timespec="seconds")
    write_model(run_dir / STAGES_FILE, StagesFile(updated_at=updated_at, stages=records))
