"""The `repro` command line: a thin layer over the library modules.

Each command group lives in its own module and calls one library function per command;
`ReproError`s become a one-line message, a hint and a non-zero exit code.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from repro import __version__
from repro.errors import ReproError


class ReproGroup(click.Group):
    """The top-level group: loads a command's module only when that command runs (so
    `repro run` does not pay for matplotlib), and turns `ReproError` into a clean message
    instead of a traceback."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*_command_modules(), *_planned_names()})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module_name = _command_modules().get(cmd_name)
        if module_name is not None:
            module = importlib.import_module(f"repro.cli.{module_name}")
            command: click.Command = getattr(module, cmd_name)
            return command
        from repro.cli import planned

        return next((c for c in planned.COMMANDS if c.name == cmd_name), None)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ReproError as err:
            click.secho(f"error: {err.message}", fg="red", err=True)
            if err.hint:
                click.echo(f"  hint: {err.hint}", err=True)
            sys.exit(err.exit_code)


@click.group(cls=ReproGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="repro")
def main() -> None:
    """Build, launch and benchmark SGLang deployments so they run the same on every machine.

    \b
    The pipeline, one command group per stage:
      recipe  -> lock -> image -> fetch -> doctor -> launch -> accept / bench -> report
    `repro run RECIPE` does all of it; `make demo` runs it on the CPU simulator.

    Every command that takes a recipe accepts its name (kimi26-ep4-dflash), a path to a
    recipe file (recipes/kimi26-ep4-dflash.yaml) or a lock file (locks/....lock.json).
    """


# Command modules that are built; each exposes a click command named like the module, and
# `_SEVERAL` lists the modules that hold more than one command.
_BUILT: list[str] = [
    "doctor",
    "recipe",
    "image",
    "launch",
    "lock",
    "fetch",
    "run",
    "report",
    "bench",
    "accept",
    "sim",
    "export",
]
_SEVERAL: dict[str, list[str]] = {
    "launch": ["launch", "status", "logs", "stop"],
    "report": ["report", "compare"],
}


def _command_modules() -> dict[str, str]:
    """Command name -> the module under repro.cli that defines it."""
    return {name: module for module in _BUILT for name in _SEVERAL.get(module, [module])}


def _planned_names() -> list[str]:
    from repro.cli import planned

    return [c.name for c in planned.COMMANDS if c.name and c.name not in _command_modules()]
