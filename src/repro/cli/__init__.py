"""The `repro` command line: a thin layer over the library modules.

Each command group lives in its own module and calls one library function per command;
`ReproError`s become a one-line message, a hint and a non-zero exit code.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from repro import __version__
from repro.errors import ReproError


class ReproGroup(click.Group):
    """Click group that turns `ReproError` into a clean message instead of a traceback."""

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


# Command modules that are built; each exposes a click command named like the module, or a
# list `COMMANDS` when it holds several (launch: launch, status, logs, stop).
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
]


def _register() -> None:
    import importlib

    from repro.cli import planned

    for module_name in _BUILT:
        module = importlib.import_module(f"repro.cli.{module_name}")
        for command in getattr(module, "COMMANDS", None) or [getattr(module, module_name)]:
            main.add_command(command)
    for command in planned.COMMANDS:
        if command.name not in main.commands:
            main.add_command(command)


_register()
