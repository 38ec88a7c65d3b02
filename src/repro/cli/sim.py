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
from repro.sim.profile import Profile, ProfileError, list_profiles, load_profile
from repro.sim.select import layout

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
    Example:
      repro sim serve --profile kimi26-ep4-rtx6000 -- \\
        --model-path moonshotai/Kimi-K2.6 --speculative-algorithm DFLASH \\
        --speculative-draft-model-path z-lab/Kimi-K2.6-DFlash
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
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the profiles as JSON.")
def profiles(name: str | None, as_json: bool) -> None:
    """List the simulator's profiles: machine, layout and where the numbers come from.

    With NAME, show that profile's provenance and assumptions in full.
    """
    if name:
        _profile_or_error(name)
    found = [load_profile(name)] if name else list_profiles()
    if as_json:
        click.echo(json.dumps([p.summary() for p in found], indent=2))
        return
    if name:
        (p,) = found
        for label, text in (
            ("profile", f"{p.name}: {p.description}"),
            ("machine", f"{_machine(p)}, {_layout(p)}"),
            ("provenance", p.provenance or "(not stated)"),
            ("assumptions", p.assumptions),
        ):
            _console.print(f"[bold]{label}[/bold]: {text}")
        return
    table = Table(title="simulator profiles (`repro sim profiles NAME` for one in full)")
    table.add_column("profile", no_wrap=True)
    table.add_column("machine")
    table.add_column("layout", no_wrap=True)
    table.add_column("numbers", no_wrap=True)
    for p in found:
        kind = p.provenance.split(":", 1)[0] if p.provenance else "?"
        table.add_row(p.name, _machine(p), _layout(p), kind)
    _console.print(table)


def _machine(p: Profile) -> str:
    d = p.deployment
    gpu = str(d.get("gpu") or "none").replace(" Blackwell", "")
    link = {"pcie": ", PCIe", "nvlink": ", NVLink"}.get(str(d.get("interconnect")), "")
    return f"{d.get('gpus', 1)}x {gpu}{link}" if gpu != "none" else "no GPU"


def _layout(p: Profile) -> str:
    return (
        " ".join(f"{k}{v}" for k, v in zip(("tp", "pp", "ep"), layout(p), strict=True) if v > 1)
        or "tp1"
    )
