"""`repro sim`: run the CPU simulator of an SGLang server on this host, list its profiles."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import NoReturn

import click
from rich.console import Console
from rich.table import Table

from repro.cli.options import PORT, FiniteFloat, json_option, sglang_python_option
from repro.errors import ReproError
from repro.settings import SIM_LOAD_SECONDS, SIM_PROFILE, SIM_SEED, SIM_TIME_SCALE
from repro.sim import main as sim_main
from repro.sim.calibration import check
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
@click.option(
    "--frontend",
    type=click.Choice(["light", "sglang"]),
    default="light",
    show_default=True,
    help="light: the simulator's own HTTP server. sglang: SGLang's own front end (HTTP server, "
    "tokenizer, detokenizer) with the simulator as its scheduler; needs --model-path with a "
    "config and tokenizer, and SGLang installed (scripts/ensure-sglang).",
)
@sglang_python_option("With --frontend sglang: the Python that has SGLang installed.")
@click.argument("sglang_args", nargs=-1, type=click.UNPROCESSED)
def serve(
    port: int,
    host: str,
    profile: str,
    seed: int | None,
    time_scale: float | None,
    load_seconds: float | None,
    frontend: str,
    sglang_python: Path,
    sglang_args: tuple[str, ...],
) -> None:
    """Run the simulator here with SGLang's server options after `--`.

    \b
    Example:
      repro sim serve --profile kimi26-ep4-rtx6000 -- \\
        --model-path moonshotai/Kimi-K2.6 --speculative-algorithm DFLASH \\
        --speculative-draft-model-path z-lab/Kimi-K2.6-DFlash

    \b
    On SGLang's own front end (speculative paths on a CPU host):
      repro sim serve --frontend sglang -- --model-path MODEL_DIR --device cuda \\
        --speculative-algorithm DFLASH --speculative-draft-model-path DRAFTER_DIR
    """
    _profile_or_error(profile)
    os.environ[SIM_PROFILE.name] = profile
    for setting, value in (
        (SIM_SEED, seed),
        (SIM_TIME_SCALE, time_scale),
        (SIM_LOAD_SECONDS, load_seconds),
    ):
        if value is not None:
            os.environ[setting.name] = str(value)
    argv = list(sglang_args)
    has_model = bool({"--model-path", "--model"} & {a.split("=", 1)[0] for a in argv})
    if frontend == "sglang":
        _serve_sglang_frontend(
            sglang_python, [*argv, "--host", host, "--port", str(port)], has_model
        )
    if not has_model:
        argv = ["--model-path", f"repro-sim/{load_profile(profile).name}", *argv]
    sys.exit(sim_main([*argv, "--host", host, "--port", str(port)]))


def _serve_sglang_frontend(python: Path, argv: list[str], has_model: bool) -> NoReturn:
    """SGLang's front end in `python`, with repro.sim (from this installation) importable."""
    if not has_model:
        raise ReproError(
            "--frontend sglang needs --model-path: a model directory or Hub repo with a "
            "config.json and a tokenizer (SGLang's tokenizer manager loads them)",
            hint="e.g. repro sim serve --frontend sglang -- --model-path ./tiny-model",
        )
    if not python.is_file() or not os.access(python, os.X_OK):
        raise ReproError(
            f"--python {python}: no Python with SGLang there",
            hint="scripts/ensure-sglang installs it into .venv-sglang/, or pass --python",
        )
    src = str(Path(__file__).resolve().parents[2])  # the directory that holds `repro/`
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    # exec: signals (Ctrl-C, a supervisor's SIGTERM) reach SGLang's launcher itself
    os.execve(python, [str(python), "-m", "repro.sim.sglang_frontend", *argv], env)


@sim.command("profiles")
@click.argument("name", required=False)
@json_option("the profiles")
def profiles(name: str | None, as_json: bool) -> None:
    """List the simulator's profiles: machine, layout and where the numbers come from.

    With NAME, show that profile's provenance and assumptions in full, and each measured
    number beside what its timing model gives on the measurement's workload.
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
            *(
                ("measured", f"{c.measurement.label()}; the model gives {c.predicted:.1f}")
                for c in check(p)
            ),
            *(("assumed", line) for line in p.assumed),
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
