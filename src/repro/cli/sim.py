"""`repro sim`: run the CPU simulator of an SGLang server on this host, list its profiles."""

from __future__ import annotations

import json
import os
import sys

import click
from rich.console import Console
from rich.table import Table

from repro.cli.options import PORT, FiniteFloat
from repro.errors import ReproError
from repro.sim import main as sim_main
from repro.sim.profile import ProfileError, list_profiles, load_profile

_console = Console(highlight=False)


def _profile_or_error(name: str) -> None:
    try:
        load_profile(name)
    except ProfileError as e:
        raise ReproError(str(e), hint="`repro sim profiles` lists them") from None


@click.group("sim")
def sim() -> None:
    """The CPU simulator of an SGLang server; every number it reports is simulated."""


@sim.command(
    "serve",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option("--port", type=PORT, default=30000, show_default=True, help="Port to listen on.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--profile", default="demo", show_default=True, help="Profile name or JSON path.")
@click.option("--seed", type=int, help="Seed of generated text and acceptance draws.")
@click.option(
    "--time-scale", type=FiniteFloat(min=0), help="Multiply every simulated duration (0: none)."
)
@click.option(
    "--load-seconds", type=FiniteFloat(min=0), help="Imitated weight loading before ready."
)
@click.argument("sglang_args", nargs=-1, type=click.UNPROCESSED)
def serve(
    port: int,
    host: str,
    profile: str,
    seed: int | None,
    time_scale: float | None,
    load_seconds: float | None,
    sglang_args: tuple[str, ...],
) -> None:
    """Run the simulator here with SGLang's server options after `--`.

    \b
    Example: repro sim serve --profile kimi26-ep4-rtx6000 -- --model-path moonshotai/Kimi-K2.6 \\
               --speculative-algorithm DFLASH --speculative-draft-model-path z-lab/Kimi-K2.6-DFlash
    """
    _profile_or_error(profile)
    os.environ["REPRO_SIM_PROFILE"] = profile
    for name, value in (
        ("REPRO_SIM_SEED", seed),
        ("REPRO_SIM_TIME_SCALE", time_scale),
        ("REPRO_SIM_LOAD_SECONDS", load_seconds),
    ):
        if value is not None:
            os.environ[name] = str(value)
    argv = list(sglang_args)
    if not {"--model-path", "--model"} & {a.split("=", 1)[0] for a in argv}:
        argv = ["--model-path", f"repro-sim/{load_profile(profile).name}", *argv]
    sys.exit(sim_main([*argv, "--host", host, "--port", str(port)]))


@sim.command("profiles")
@click.option("--json", "as_json", is_flag=True, help="Print the profiles as JSON.")
def profiles(as_json: bool) -> None:
    """List the simulator's profiles and the assumptions behind their numbers."""
    found = list_profiles()
    if as_json:
        click.echo(json.dumps([p.summary() for p in found], indent=2))
        return
    table = Table(title="simulator profiles (numbers are assumptions: see each one)")
    table.add_column("profile", no_wrap=True)
    table.add_column("what it stands for")
    table.add_column("assumptions")
    for p in found:
        table.add_row(p.name, p.description, p.assumptions)
    _console.print(table)
