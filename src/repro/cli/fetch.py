"""`repro fetch RECIPE`: download the locked model and drafter into the Hub cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from repro.cli.options import FiniteFloat, json_option
from repro.lock import fetch_recipe, load_locked
from repro.units import human_bytes, parse_bytes

if TYPE_CHECKING:  # the stage modules load when the command runs: `repro --help` stays fast
    from repro.hub import FetchReport


def _size(_ctx: click.Context, _param: click.Parameter, value: str) -> int:

    try:
        return parse_bytes(value)
    except ValueError as err:
        raise click.BadParameter(str(err)) from None


@click.command("fetch")
@click.argument("recipe")
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Hub cache to download into (default: HF_HUB_CACHE, ~/.cache/huggingface/hub). "
    "The server must mount the same cache.",
)
@click.option(
    "--keep-free",
    default="1GiB",
    show_default=True,
    callback=_size,
    help="Free space to leave on the cache's disk after the download (e.g. 10GiB, 0).",
)
@click.option(
    "--margin-percent",
    type=FiniteFloat(0, 100),
    default=5.0,
    show_default=True,
    help="Extra free space required, as a percentage of the download.",
)
@click.option(
    "--verify-all", is_flag=True, help="Hash every cached file, not only the newly downloaded."
)
@click.option("--dry-run", is_flag=True, help="Show what would be downloaded; download nothing.")
@json_option("the result")
def fetch(
    recipe: str,
    cache_dir: Path | None,
    keep_free: int,
    margin_percent: float,
    verify_all: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Download model and drafter weights at the locked commits, after a disk-space check.

    RECIPE is a name, a recipe file or a lock file; the recipe must be locked (`repro lock`).
    Before any byte is written, the bytes still missing from the cache are compared with the
    free space of its filesystem (plus a margin). Files already complete are kept, so an
    interrupted fetch resumes; sizes (and sha256 of new files) are verified afterwards.
    HF_TOKEN is read from the environment for gated repositories; HF_HUB_OFFLINE=1 checks
    the cache without touching the network.
    """
    from repro.hub import SpaceMargin  # deferred: huggingface_hub, for this command only

    margin = SpaceMargin(fraction=margin_percent / 100, keep_free=keep_free)
    report = fetch_recipe(
        load_locked(recipe, lock="require"),
        cache_dir=cache_dir,
        margin=margin,
        verify_all=verify_all,
        dry_run=dry_run,
        on_event=lambda msg: click.echo(msg, err=True),
    )
    if as_json:
        click.echo(json.dumps(report.model_dump(mode="json"), indent=2, sort_keys=True))
    else:
        _print(report, dry_run)


def _print(report: FetchReport, dry_run: bool) -> None:
    # rich loads after the download: its import is start-up time every fetch would pay first
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    title = "Would fetch" if dry_run else "Fetched"
    table = Table(title=f"{title} into {report.cache_dir}", title_justify="left")
    for column in ("repository", "commit", "files", "size", "downloaded", "sha256 checked"):
        table.add_column(column, overflow="fold")
    for repo in report.repos:
        if repo.simulated:
            table.add_row(repo.repo, "simulated", "-", "-", "-", "-")
            continue
        table.add_row(
            repo.repo,
            (repo.sha or "")[:12],
            str(repo.files),
            human_bytes(repo.total_bytes),
            human_bytes(repo.downloaded_bytes),
            "-" if dry_run else str(repo.hashed_files),
        )
    console.print(table)
    if report.offline:
        console.print("offline (HF_HUB_OFFLINE): everything was already in the cache")
    for repo in report.repos:
        if repo.snapshot and not dry_run:
            console.print(f"{repo.repo}: {repo.snapshot}")
