"""`repro launch | status | logs | stop`: a recipe's server under Docker Compose."""

from __future__ import annotations

import json
import shlex

import click
from rich.console import Console
from rich.markup import escape

from repro.cli.options import PORT, given_options, json_option, refuse_with, sim_options
from repro.errors import ReproError
from repro.image.locked_image import check_local_image
from repro.interrupts import Interrupted, signal_number
from repro.launch import LaunchSpec, load_spec, prepare_deployment
from repro.launch import launch as launch_server
from repro.launch import status as status_of
from repro.launch import stop as stop_deployment
from repro.launch.compose import compose_client, compose_command
from repro.launch.deploy import HealthPoll, deployment_dir, known_deployments
from repro.launch.from_recipe import image_to_run, launch_spec_for
from repro.launch.spec import state_dir
from repro.live import status_line
from repro.lock import load_locked
from repro.run.simulate import simulated_recipe

_console = Console(stderr=True, highlight=False)


@click.command("launch")
@click.argument("recipe")
@click.option(
    "--port",
    type=PORT,
    help="Host port on 127.0.0.1 (default: the server port).",
)
@click.option("--dry-run", is_flag=True, help="Print the compose override and command only.")
@sim_options
def launch(
    recipe: str, port: int | None, dry_run: bool, sim: str | None, time_scale: float
) -> None:
    """Start RECIPE's server with Docker Compose and wait until /health_generate is 200.

    Fails fast when the container exits during start-up, printing its last log lines and exit
    code; Ctrl-C or SIGTERM during the wait stops what was started (exit 128 + the signal).
    The compose override is written to .repro/deployments/<name>/ so the same deployment can
    be run by hand. A locked recipe runs what its lock pins (locks/<name>.lock.json): the
    locked commits, the Hub offline.

    With --sim the deployment is `<recipe>-sim`: the recipe's own server command on the
    simulator (e.g. two drafters side by side on two ports, for `repro bench --url`).
    """
    ctx = click.get_current_context()
    if sim is None:
        refuse_with(
            ctx, given_options(ctx, "time_scale"), "acts only with --sim (it scales the simulator)"
        )
    else:
        recipe = str(simulated_recipe(recipe, state_dir() / "sim", sim or None, time_scale))
    locked = load_locked(recipe, lock="attach")
    if locked.image is not None and not dry_run:
        check_local_image(locked, locked.image)  # a lock runs only the image it records
    spec = launch_spec_for(locked, image_to_run(locked, build_tag=not dry_run), host_port=port)
    override, command = prepare_deployment(spec)
    if dry_run:
        click.echo(override.read_text())
        click.echo(shlex.join(command))
        return
    with _console.status(f"starting {spec.name}") as status:

        def show(progress: HealthPoll) -> None:
            prefix = f"{spec.name}: {progress.state}, {progress.elapsed_s:.0f} s"
            status.update(status_line(_console, prefix, progress.last_log_line))

        try:
            url = launch_server(spec, show)
        except KeyboardInterrupt as interrupt:  # Ctrl-C, SIGTERM, SIGHUP: exit 128 + n
            _console.print(f"[yellow]interrupted[/]: {escape(spec.name)} was stopped")
            raise Interrupted(signal_number(interrupt)) from None
    _console.print(f"[green]healthy[/] {spec.name} at {url}")
    click.echo(url)


@click.command("status")
@click.argument("name", required=False, metavar="[DEPLOYMENT|RECIPE]")
@json_option("the status")
def status(name: str | None, as_json: bool) -> None:
    """Show the state of one deployment, or of all that repro knows."""
    names = [_known(name).name] if name else known_deployments()
    rows = [status_of(n) for n in names]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("no deployments")
    for row in rows:
        health = "healthy" if row["server_healthy"] else "not answering"
        click.echo(f"{row['name']:<28} {row['status']:<10} {health:<14} {row['url']}")


@click.command("logs")
@click.argument("name", metavar="DEPLOYMENT|RECIPE")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new lines.")
@click.option("--tail", default="200", show_default=True, help="Lines from the end, or 'all'.")
def logs(name: str, follow: bool, tail: str) -> None:
    """Print a deployment's server log."""
    spec = _known(name)
    compose = compose_client(spec.project, deployment_dir(spec.name) / "compose.override.yaml")
    if not follow:
        click.echo(compose.compose.logs(tail=tail, no_log_prefix=True), nl=False)
        return
    for _source, chunk in compose.compose.logs(
        tail=tail, follow=True, stream=True, no_log_prefix=True
    ):
        click.echo(chunk.decode(errors="replace"), nl=False)


@click.command("stop")
@click.argument("name", metavar="DEPLOYMENT|RECIPE")
def stop(name: str) -> None:
    """Stop and remove a deployment's containers."""
    spec = _known(name)
    stop_deployment(spec.name)
    click.echo(f"stopped {spec.name}")
    override = deployment_dir(spec.name) / "compose.override.yaml"
    _console.print(f"[dim]{escape(shlex.join(compose_command(spec.project, override, 'down')))}[/]")


def _deployment_name(ref: str) -> str:
    """The deployment `ref` names: a deployment name, or whatever `repro launch` takes (a
    recipe name, a recipe file, a lock file), read as the recipe's name."""
    if load_spec(ref) is not None or not ref.endswith((".yaml", ".yml", ".json")):
        return ref
    try:
        return load_locked(ref).recipe.name
    except ReproError:
        return ref


def _known(ref: str) -> LaunchSpec:
    spec = load_spec(_deployment_name(ref))
    if spec is None:
        known = ", ".join(known_deployments()) or "none"
        raise ReproError(
            f"no deployment named {ref!r} in {deployment_dir('').resolve()} (known: {known})",
            hint="`repro status` lists this checkout's deployments",
        )
    return spec
