"""`repro lock RECIPE [--check] [-o FILE] [--json]`: pin a recipe into its lock file."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.table import Table

from repro.cli.options import engine_option, json_option
from repro.lock import load_locked, lock_recipe
from repro.units import human_bytes

if TYPE_CHECKING:  # the stage modules load when the command runs: `repro --help` stays fast
    from repro.lock import LockResult


@click.command("lock")
@click.argument("recipe")
@click.option(
    "--check",
    is_flag=True,
    help="Compare the existing lock with what the recipe resolves to now; list the drift and "
    "exit 1 if there is any. Writes nothing.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Lock file to write or check (default: locks/<recipe>.lock.json).",
)
@json_option("the result")
@engine_option(
    "Record what SGLang's own start-up code of the image's release resolves the recipe "
    "to (the engine dry-start of `repro recipe check`), when it is installed here."
)
@click.pass_context
def lock(
    ctx: click.Context,
    recipe: str,
    check: bool,
    output: Path | None,
    as_json: bool,
    engine: bool,
) -> None:
    """Pin a recipe's model and drafter revisions, image spec and patches into a lock file.

    RECIPE is a name (kimi26-ep4-dflash), a recipe file or a lock file. The model and drafter
    revisions become commit SHAs with their file lists and sizes (HF_TOKEN is used, never
    stored). Re-locking an unchanged recipe leaves the file byte-identical. The image stage
    later adds the image digest, fingerprint and catalog to the same file.
    """

    result = lock_recipe(load_locked(recipe), check=check, output=output)
    engine_line, refused = None, False
    if engine and not check:
        result, engine_line, refused = _record_resolved(result)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2, sort_keys=True))
    else:
        _print(result, Console(highlight=False))
    if engine_line:
        click.echo(engine_line, err=as_json)
    ctx.exit(1 if result.drift or refused else 0)


def _record_resolved(result: LockResult) -> tuple[LockResult, str, bool]:
    """Dry-start the locked recipe and record what SGLang resolved in its lock (unless the
    lock already holds exactly that); the line to print, and whether SGLang refused it."""
    from repro.lock import update_lock_resolved
    from repro.realengine.drystart import check_engines, findings
    from repro.settings import SGLANG_PYTHON

    [dry] = check_engines([load_locked(result.path)], Path(SGLANG_PYTHON.text()))
    if dry.result is None or dry.target is None:
        return result, dry.not_run or "engine dry-start not run", False
    if dry.result != result.lock.resolved:
        lock = update_lock_resolved(result.path, dry.result)
        result = dataclasses.replace(result, lock=lock, written=True)
    problems = findings(dry.target, dry.result)
    if problems:
        return result, "\n".join(f"error: {p}" for p in problems), True
    return (
        result,
        (
            f"recorded what SGLang {dry.result.sglang_version}'s start-up resolved "
            f"({len(dry.result.changed)} values; `repro recipe render --resolved` shows them)"
        ),
        False,
    )


def _print(result: LockResult, console: Console) -> None:

    table = Table(title=f"Lock of {result.lock.name}", title_justify="left")
    for column in ("role", "repository", "revision", "commit", "files", "size"):
        table.add_column(column, overflow="fold")
    for role, pin in (("model", result.lock.model), ("drafter", result.lock.drafter)):
        if pin is None:
            continue
        if pin.simulated:
            table.add_row(role, pin.repo, pin.revision, "simulated", "-", "-")
        else:
            sha = (pin.sha or "")[:12]
            size = human_bytes(pin.total_bytes)
            table.add_row(role, pin.repo, pin.revision, sha, str(len(pin.files)), size)
    console.print(table)
    if result.checked:
        if result.drift:
            console.print(f"[bold red]{result.path} has drifted:[/]")
            for line in result.drift:
                console.print(f"  - {line}")
            console.print(f"re-lock with `repro lock {result.path}` to accept the changes")
        else:
            console.print(f"[green]{result.path} is up to date[/]")
    elif result.created:
        console.print(f"[green]wrote {result.path}[/]")
    elif result.written:
        console.print(f"[yellow]updated {result.path}[/]")
    else:
        console.print(f"{result.path} unchanged")
