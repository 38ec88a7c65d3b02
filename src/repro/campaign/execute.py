"""`repro campaign run`: every point of a plan as an ordinary `repro run`, unattended.

Each point is launched, accepted (when it has a drafter), swept and stopped by
`repro.run.pipeline.run_pipeline`, into a run folder under `points/<point>/`. A point that
fails (refused flags, a crash at start, a failed stage) is recorded with its reason and the
campaign goes on. `index.json` is written before and after every point, so Ctrl-C or kill -9
loses nothing finished: `--resume DIR` skips done and failed points and continues a started
point's own run folder (which keeps its finished levels). Both points of a lossless pair (a
drafter point and its baseline point) keep their server up after the run for the lossless
probe (repro.campaign.lossless), then stop it. A failure is recorded and shown
whole (a lock's every problem, not its first line); an interrupt, wherever it lands, ends with
the campaign's own resume command, not the point's `repro run --resume`.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from repro.campaign.folder import CAMPAIGNS_DIR, CampaignFolder
from repro.campaign.lossless import outputs_file, probe_outputs, probed
from repro.campaign.plan import plan_campaign
from repro.campaign.points import load_campaign
from repro.errors import ReproError
from repro.exitcodes import ExitCode
from repro.interrupts import (
    signal_name,
    signal_number,
    signals_as_interrupts,
    signals_ignored,
)
from repro.run.context import RunContext
from repro.run.pipeline import RunOptions, run_pipeline
from repro.runfolder import RunFolder
from repro.schema.campaign import CampaignIndex, CampaignPlan, PlannedPoint, PointState
from repro.units import human_seconds

# a simulated point's doctor, lock, image check, start and stop (its image built already):
# 6 s a point on the 2-core dev box (benchmarks/results/plan_vs_run.txt)
SIM_START_S = 6.0


@dataclass
class CampaignRunOptions:
    source: Path | None = None  # a campaign file (a new campaign folder)
    resume: Path | None = None  # or a campaign folder to continue
    sim: bool = False  # every point on the simulator (the profile of its layout)
    time_scale: float = 1.0  # the simulator's, with sim
    campaigns_dir: Path = CAMPAIGNS_DIR
    retry_failed: bool = False  # with resume: run failed points again


def run_campaign(options: CampaignRunOptions, console: Console) -> CampaignFolder:
    """Run every pending point; returns the campaign folder (see the module docstring).
    Raises CampaignFailed, after the last point, when a point failed."""
    with ExitStack() as held:
        if options.resume is not None:
            folder = CampaignFolder.open(options.resume)
            held.enter_context(folder.claim())  # before the index is read: a holder writes it
            plan, index = folder.read_plan(), folder.read_index()
            for state in index.points:
                if options.retry_failed and state.status == "failed":
                    state.status = "pending"
        else:
            if options.source is None:
                raise ReproError("give a campaign file, or --resume a campaign folder")
            if options.time_scale < 0:
                raise ReproError(f"--time-scale {options.time_scale}: must be 0 or more")
            folder, plan, index = start_campaign(
                options.source, options.campaigns_dir, console, options.sim, options.time_scale
            )
            held.enter_context(folder.claim())
        try:
            run_points(folder, plan, index, console)
        except KeyboardInterrupt as interrupt:  # between two points, or while saving the index
            error = ReproError(f"interrupted by {signal_name(interrupt)}")
            error.exit_code = ExitCode.SIGNAL + signal_number(interrupt)
            raise _resumable(error, folder) from None
        except ReproError as err:
            if err.exit_code < ExitCode.SIGNAL:
                raise
            raise _resumable(err, folder) from None  # a point's run was interrupted
    return folder


def resume_command(folder: CampaignFolder) -> str:
    """What continues an interrupted campaign: every pending and started point, in order."""
    return f"repro campaign run --resume {folder.path}"


def _resumable(interrupt: ReproError, folder: CampaignFolder) -> ReproError:
    """The interrupt with the campaign's resume command as its hint (a point's run names its
    own `repro run --resume`, which would finish that point alone)."""
    error = ReproError(
        interrupt.message,
        hint=f"finished points and levels are kept: continue with `{resume_command(folder)}`",
    )
    error.exit_code = interrupt.exit_code
    return error


def start_campaign(
    source: Path,
    campaigns_dir: Path,
    console: Console,
    sim: bool = False,
    time_scale: float = 1.0,
    sim_profile: str | None = None,
) -> tuple[CampaignFolder, CampaignPlan, CampaignIndex]:
    """A new campaign folder for the campaign file `source`: its plan and an index of
    pending points (what `run` and the exports start from)."""
    campaign = load_campaign(source)
    folder = CampaignFolder.create(campaign.name, source, campaigns_dir)
    console.print(f"[bold]campaign[/] {escape(campaign.name)} -> {escape(str(folder.path))}")
    try:
        plan = plan_campaign(
            source, folder.recipes_dir, progress=lambda line: console.print(f"  {escape(line)}")
        )
    except ReproError:
        folder.remove()  # a campaign that cannot be planned leaves no folder behind
        raise
    folder.write_plan(plan)
    index = CampaignIndex(
        campaign=campaign.name,
        machine=campaign.machine,
        simulated=sim,
        time_scale=time_scale if sim else None,
        sim_profile=sim_profile if sim else None,
        points=[PointState(name=p.name) for p in plan.points],
    )
    folder.write_index(index)
    return folder, plan, index


def run_points(
    folder: CampaignFolder, plan: CampaignPlan, index: CampaignIndex, console: Console
) -> None:
    states = {state.name: state for state in index.points}
    todo = [p for p in plan.points if states[p.name].status not in ("done", "failed")]
    etas = {
        p.name: eta_left(p, index, _finished_levels(folder, states[p.name]))
        for p in todo
        if p.same_server_as is None
    }
    left_s = sum(etas.values())
    probes = probed(plan)
    for number, point in enumerate(plan.points, 1):
        state = states[point.name]
        if state.status in ("done", "failed"):
            continue
        if point.same_server_as is not None:  # measured once, under the first point's name
            twin = states[point.same_server_as]
            state.status, state.run_dir = twin.status, twin.run_dir
            state.reason = f"the same server as {point.same_server_as}"
            folder.write_index(index)
            continue
        eta = f", about {human_seconds(left_s)} left" if left_s else ""
        console.rule(f"[bold]point {number}/{len(plan.points)}: {escape(point.name)}{eta}")
        state.status = "running"
        folder.write_index(index)
        started = time.monotonic()
        try:
            _run_point(folder, point, index, state, console, point.name in probes)
            state.status, state.reason = "done", None
        except ReproError as err:
            state.run_dir = folder.run_dir_for(point.name)
            if err.exit_code >= ExitCode.SIGNAL:  # Ctrl-C, SIGTERM: the point stays to do
                state.status, state.reason = "pending", err.message
                state.seconds = (state.seconds or 0.0) + time.monotonic() - started
                folder.write_index(index)
                raise
            state.status, state.reason = "failed", err.message  # every line: all its problems
            console.print(f"[red]point {escape(point.name)} failed[/]: {escape(state.reason)}")
        state.run_dir = folder.run_dir_for(point.name)
        state.seconds = (state.seconds or 0.0) + time.monotonic() - started
        left_s = max(0.0, left_s - etas.get(point.name, 0.0))
        folder.write_index(index)
    failed = [s.name for s in index.points if s.status == "failed"]
    summary = f"{len(index.points) - len(failed)} of {len(index.points)} points done"
    console.print(f"[bold]campaign[/] {escape(summary)}")
    if failed:
        raise CampaignFailed(
            f"{len(failed)} point(s) failed: {', '.join(failed)} (reasons in {folder.index_file})",
            hint=f"the others are kept: `repro campaign report {folder.path}`; after a fix, "
            f"`{resume_command(folder)} --retry-failed`",
        )


def _finished_levels(folder: CampaignFolder, state: PointState) -> set[tuple[int, int]]:
    """(concurrency, repeat) of the levels a started point's run folder already holds."""
    run_dir = folder.run_dir_of(state)
    bench = RunFolder(run_dir).bench if run_dir is not None else None
    if bench is None or not bench.summary_file.exists():
        return set()
    try:
        return {(lv.concurrency, lv.repeat) for lv in bench.read_summary().levels}
    except ReproError:  # unreadable: counted as not started
        return set()


def eta_left(point: PlannedPoint, index: CampaignIndex, finished: set[tuple[int, int]]) -> float:
    """The point's predicted wall time left here, without the levels it `finished` (a resumed
    point; their warm-ups counted as a share of all): on the simulator its accept stage,
    warm-ups and levels at the time scale plus a point's start, else the plan's estimate (0
    when it has none)."""
    done = [lv for lv in point.predicted if (lv.concurrency, lv.repeat) in finished]
    levels_done = sum(lv.duration for lv in done)
    warmups_done = (point.warmups_s or 0.0) * len(done) / max(1, len(point.predicted))
    accept_left = 0.0 if done else point.accept_s or 0.0  # it runs before the sweep
    if index.simulated and point.levels_s is not None:
        left_s = accept_left + (point.warmups_s or 0.0) - warmups_done
        left_s += point.levels_s - levels_done
        return SIM_START_S + left_s * (index.time_scale or 0.0)
    done_s = levels_done + warmups_done
    if done:  # the accept stage ran, and the image is there
        done_s += (point.accept_s or 0.0) + (point.image_s or 0.0)
    return max(0.0, (point.estimate_s or 0.0) - done_s)


class CampaignFailed(ReproError):
    """Every point ran, and some failed: the campaign folder holds the rest."""


def _run_point(
    folder: CampaignFolder,
    point: PlannedPoint,
    index: CampaignIndex,
    state: PointState,
    console: Console,
    probe: bool = False,
) -> None:
    """The point's `repro run`; with `probe` (a side of a lossless pair) its server stays up
    after the run for the lossless probe, and is stopped after it."""
    resume = folder.run_dir_for(point.name)
    options = RunOptions(
        ref=str(folder.inside(point.recipe)),
        runs_dir=folder.point_dir(point.name),
        resume=folder.path / resume if resume else None,
        sim=(index.sim_profile or "") if index.simulated else None,
        time_scale=index.time_scale if index.time_scale is not None else 1.0,
        keep=probe,
    )
    state.run_dir = None
    if not probe:
        run_pipeline(options, console)
        return
    try:
        result = run_pipeline(options, console)
    except ReproError:  # a failed stage keeps a --keep server up: this one is not kept
        if (failed := folder.run_dir_for(point.name)) is not None:
            _stop_kept(folder.path / failed)
        raise
    try:
        ctx = _context(result.run_dir)
        if ctx.url is None:
            raise ReproError("its run recorded no server to probe")
        top = max(ctx.recipe.bench.concurrencies, default=1)
        with signals_as_interrupts(), console.status(f"lossless probe of {escape(point.name)}"):
            probe_outputs(ctx.url, point.name, top, outputs_file(folder.path, point.name))
        console.print(f"  {escape(point.name)}: lossless probe answered")
    except ReproError as err:  # the point's results stand; its pair is reported unchecked
        console.print(f"[yellow]{escape(point.name)}: no lossless probe[/]: {escape(err.message)}")
    finally:
        _stop_kept(result.run_dir)


def _context(run_dir: Path) -> RunContext:
    return RunContext.create(str(run_dir), run_dir, run_dir.parent, None)


def _stop_kept(run_dir: Path) -> None:
    """Stop the server the point's run kept up (its log kept, as `repro run` keeps it)."""
    with signals_ignored():
        _context(run_dir).stop_server()
