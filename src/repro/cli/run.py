"""`repro run RECIPE|LOCK`: the whole pipeline in one go."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from repro.campaign.listing import campaigns_dir_of, list_campaigns
from repro.cli.options import PORT, given_options, json_option, refuse_with, sim_options, warn
from repro.run import STAGE_NAMES, RunOptions, exit_code_of, run_pipeline
from repro.run.listing import RunListing, list_runs
from repro.tables import fit
from repro.urls import server_urls

_FIRST, _LAST = STAGE_NAMES[0], STAGE_NAMES[-1]
_HELP = f"""Check, lock, build, fetch, launch, measure and report RECIPE, then stop the server.

\b
Stages: {", ".join(STAGE_NAMES)}.
The exit code names the stage that failed: 10 + its position ({_FIRST} {exit_code_of(_FIRST)}
... {_LAST} {exit_code_of(_LAST)}). Ctrl-C stops what repro started and keeps every finished
result; `--resume RUN_DIR` continues.

With --url the server is one repro did not start (a Kubernetes pod's, another
team's): doctor, image, fetch, launch and stop are skipped; lock, accept, bench
and report run against it, its identity checked against the recipe as always.
"""


@click.command("run", help=_HELP)
@click.argument("recipe", required=False)
@click.option("--dry-run", is_flag=True, help="Print the plan and the exact commands only.")
@click.option("--keep", is_flag=True, help="Leave the server up at the end.")
@click.option("--from", "from_stage", type=click.Choice(STAGE_NAMES), help="Start at this stage.")
@click.option(
    "--resume",
    type=click.Path(path_type=Path, exists=True, file_okay=False),
    help="Continue a failed run directory without redoing finished stages.",
)
@click.option(
    "--port",
    type=PORT,
    help="Host port for the server (default: the recipe's).",
)
@click.option(
    "--url",
    metavar="URL",
    help="Measure the server at URL instead of launching one (e.g. a Kubernetes pod's).",
)
@click.option(
    "--runs-dir",
    type=click.Path(path_type=Path),
    default=Path("runs"),
    show_default=True,
    help="Where run directories are created.",
)
@sim_options
@json_option("the run folder and stages")
def run(
    recipe: str | None,
    dry_run: bool,
    keep: bool,
    from_stage: str | None,
    resume: Path | None,
    port: int | None,
    url: str | None,
    runs_dir: Path,
    sim: str | None,
    time_scale: float,
    as_json: bool,
) -> None:
    if recipe is None and resume is None:
        raise click.UsageError("give a RECIPE (name, file or lock) or --resume RUN_DIR")
    ctx = click.get_current_context()
    if resume is not None:
        refuse_with(
            ctx,
            ([recipe] if recipe else []) + given_options(ctx, "sim", "time_scale", "runs_dir"),
            "cannot be combined with --resume: a resumed run keeps its own recipe, simulator "
            "and folder (resume without them, or start a new run)",
        )
    elif sim is None:
        refuse_with(
            ctx, given_options(ctx, "time_scale"), "acts only with --sim (it scales the simulator)"
        )
    if url is not None:
        refuse_with(
            ctx,
            given_options(ctx, "resume", "sim", "port", "keep", "dry_run"),
            "cannot be combined with --url: that server is not repro's to start, place, keep "
            "or plan (a resumed --url run measures its own URL)",
        )
        [url] = server_urls([url], warn)
    if dry_run:
        refuse_with(
            ctx, given_options(ctx, "as_json"), "cannot be combined with --dry-run (a text plan)"
        )
    console = Console(stderr=True, highlight=False)
    result = run_pipeline(
        RunOptions(
            ref=recipe or "",
            runs_dir=runs_dir,
            dry_run=dry_run,
            keep=keep,
            from_stage=from_stage,
            resume=resume,
            port=port,
            sim=sim,
            time_scale=time_scale,
            url=url,
        ),
        console,
    )
    if dry_run:
        return
    if as_json:
        stages = [record.model_dump(mode="json") for record in result.stages]
        click.echo(json.dumps({"run_dir": str(result.run_dir), "stages": stages}, indent=2))
        return
    table = Table(title=f"repro run: {result.run_dir}", title_justify="left")
    for column in ("stage", "status", "seconds", "result"):
        table.add_column(column, justify="right" if column == "seconds" else "left")
    for record in result.stages:
        seconds = f"{record.seconds:.1f}" if record.seconds is not None else ""
        table.add_row(record.name, record.status, seconds, record.summary)
    console.print(fit(table))
    click.echo(result.run_dir)


@click.command("runs")
@click.option(
    "--runs-dir",
    type=click.Path(path_type=Path),
    default=Path("runs"),
    show_default=True,
    help="Where run directories are.",
)
@json_option("the result")
def runs(runs_dir: Path, as_json: bool) -> None:
    """List run folders (`repro run`, `repro bench`, `repro accept`): machine or simulator
    profile and status (done, failed at STAGE, interrupted at STAGE, incomplete); the recipe
    and start time are in the folder's name (and in --json). Then the campaigns under
    RUNS_DIR/campaigns: machine and how many points are done, failed or to do."""
    listed, campaigns = list_runs(runs_dir), list_campaigns(runs_dir)
    if as_json:
        shown = {
            "runs": [r.to_json() for r in listed],
            "campaigns": [c.to_json() for c in campaigns],
        }
        click.echo(json.dumps(shown, indent=2))
        return
    if not listed and not campaigns:
        click.echo(f"no runs under {runs_dir}", err=True)
        return
    console = Console(highlight=False)
    if listed:
        console.print(fit(_runs_table(runs_dir, listed)))
    if campaigns:
        table = Table(
            title=f"campaigns in {campaigns_dir_of(runs_dir)}",
            title_justify="left",
            box=box.SIMPLE_HEAD,
        )
        for column in ("folder", "machine", "points"):
            table.add_column(column, no_wrap=column == "folder")
        for c in campaigns:
            table.add_row(escape(Path(c.folder).name), escape(c.machine), escape(c.status))
        console.print(fit(table))


def _runs_table(runs_dir: Path, listed: list[RunListing]) -> Table:
    # a folder's name holds its start time and, mostly, its recipe: those columns only
    # where the name does not say them
    named = all(r.recipe in Path(r.folder).name for r in listed)
    table = Table(title=f"runs in {runs_dir}", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("folder", no_wrap=True)
    if not named:
        table.add_column("recipe")
    table.add_column("machine")
    table.add_column("status", no_wrap=True)
    for r in listed:
        cells = [Path(r.folder).name, *([] if named else [r.recipe]), r.machine, r.status]
        table.add_row(*cells)
    return table
