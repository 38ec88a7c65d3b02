"""The `repro` command line: a thin layer over the library modules.

Each command group lives in its own module and calls one library function per command;
`ReproError`s become a one-line message, a hint and a non-zero exit code.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import importlib
import os
import sys

# repro uses no pydantic plugin; without this, the first model of every command scans the
# metadata of every installed distribution for one (pydantic/plugin/_loader.py), tens of ms of
# each command's start-up. A value the user set is kept.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
from typing import Any

import click

from repro.errors import ReproError
from repro.interrupts import Interrupted, signal_name, signals_as_interrupts
from repro.safetext import clean, clean_lines

# A full disk or a read-only or forbidden folder: the machine's state, said in one line.
_MACHINE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}


class ReproGroup(click.Group):
    """The top-level group: loads a command's module only when that command runs (so
    `repro run` does not pay for matplotlib), and turns `ReproError` into a clean message
    instead of a traceback."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_command_modules())

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module_name = _command_modules().get(cmd_name)
        if module_name is None:
            return None
        module = importlib.import_module(f"repro.cli.{module_name}")
        command: click.Command = getattr(module, cmd_name)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            # SIGTERM and SIGHUP take Ctrl-C's path in every command (what it started is
            # stopped, what it finished is kept), not Python's default of dying on the spot.
            with signals_as_interrupts():
                return super().invoke(ctx)
        except Interrupted as interrupt:
            click.secho(f"error: interrupted by {signal_name(interrupt)}", fg="red", err=True)
            sys.exit(128 + interrupt.signum)
        except ReproError as err:  # its text may quote a server or a file: cleaned
            click.secho(f"error: {clean_lines(err.message)}", fg="red", err=True)
            if err.hint:
                click.echo(f"  hint: {clean_lines(err.hint)}", err=True)
            sys.exit(err.exit_code)
        except OSError as err:
            if err.errno not in _MACHINE_ERRNOS:
                raise  # anything else is a bug: keep its traceback
            where = f" ({clean(err.filename)})" if err.filename else ""
            click.secho(f"error: {err.strerror}{where}", fg="red", err=True)
            click.echo("  hint: free disk space or fix the permission, then run it again", err=True)
            sys.exit(1)


@click.group(cls=ReproGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="repro", prog_name="repro")  # looked up on --version only
def main() -> None:
    """Build, launch and benchmark SGLang deployments so they run the same on every machine.

    \b
    The pipeline, one command group per stage:
      recipe > doctor > lock > image > fetch > launch > accept / bench > report
    `repro run RECIPE` does all of it; `make demo` runs it on the CPU simulator.

    Every command that takes a recipe accepts its name (kimi26-ep4-dflash), a path to a
    recipe file (recipes/kimi26-ep4-dflash.yaml) or a lock file (locks/....lock.json).
    """


# Command modules; each exposes a click command named like the module, and `_SEVERAL` lists
# the modules that hold more than one command.
_MODULES: list[str] = [
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
    "campaign",
]
_SEVERAL: dict[str, list[str]] = {
    "launch": ["launch", "status", "logs", "stop"],
    "report": ["report", "compare"],
    "run": ["run", "runs"],
}


def entry() -> None:
    """The `repro` console script: `main`, then an exit that skips the interpreter's teardown.

    After the work is done and every file is written, freeing the ~550 modules a command
    loaded (pydantic, huggingface_hub, ...) object by object takes 50-100 ms, as long as a
    small `repro fetch` spends hashing (benchmarks/fetch_throughput.py). Threads are joined
    and atexit handlers run as always; only the finalization after them is skipped.
    """
    status: int | None = 1  # a bug's traceback, unless main ends with a status of its own

    def exit_now() -> None:
        if status is None:
            return
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()  # a closed pipe: Python's own exit would ignore it too
        os._exit(status)

    atexit.register(exit_now)  # the first registered runs last, after every other handler
    try:
        main()
        status = 0
    except SystemExit as stop:  # click ends every command with one
        status = _status_of(stop.code)
        raise
    except KeyboardInterrupt:
        status = None  # Python's own exit then dies of SIGINT, as a shell loop expects
        raise


def _status_of(code: object) -> int:
    """The status `sys.exit(code)` gives the process: None is 0, a message (printed) is 1."""
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def _command_modules() -> dict[str, str]:
    """Command name -> the module under repro.cli that defines it."""
    return {name: module for module in _MODULES for name in _SEVERAL.get(module, [module])}
