"""`repro run RECIPE|LOCK`: the whole pipeline in one go."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from repro.run import STAGE_NAMES, RunOptions, exit_code_of, run_pipeline

_FIRST, _LAST = STAGE_NAMES[0], STAGE_NAMES[-1]
_HELP = f"""Check, lock, build, fetch, launch, measure and report RECIPE, then stop the server.

\b
Stages: {", ".join(STAGE_NAMES)}.
The exit code names the stage that failed: 10 + its position ({_FIRST} {exit_code_of(_FIRST)}
... {_LAST} {exit_code_of(_LAST)}). Ctrl-C stops what repro started and keeps every finished
result; `--resume RUN_DIR` continues.
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
    type=click.IntRange(1, 65535),
    help="Host port for the server (default: the recipe's).",
)
@click.option(
    "--runs-dir",
    type=click.Path(path_type=Path),
    default=Path("runs"),
    show_default=True,
    help="Where run directories are created.",
)
def run(
    recipe: str | None,
    dry_run: bool,
    keep: bool,
    from_stage: str | None,
    resume: Path | None,
    port: int | None,
    runs_dir: Path,
) -> None:
    if recipe is None and resume is None:
        raise click.UsageError("give a RECIPE (name, file or lock) or --resume RUN_DIR")
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
        ),
        console,
    )
    if dry_run:
        return
    table = Table(title=f"repro run: {result.run_dir}", title_justify="left")
    for column in ("stage", "status", "seconds", "result"):
        table.add_column(column)
    for record in result.stages:
        seconds = f"{record.seconds:.1f}" if record.seconds is not None else ""
        table.add_row(record.name, record.status, seconds, record.summary)
    console.print(table)
    click.echo(result.run_dir)
