"""Running the machine's own tools (nvidia-smi, docker) behind one injectable function.

Collectors never call `subprocess` directly: they take a `Runner`, so a caller can point them
at another executable (tests use a real script that prints a fixture capture). A missing
executable or a timeout is a result, never an exception: doctor must still report the rest.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from repro.settings import Setting


@dataclass(frozen=True)
class CommandResult:
    """What a command printed and how it ended; `returncode` is None when it timed out."""

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def describe_failure(self) -> str:
        """One line saying how the command failed, for a finding's message."""
        if self.returncode is None:
            return f"`{' '.join(self.argv)}` timed out"
        detail = (self.stderr.strip() or self.stdout.strip()).splitlines()
        tail = detail[-1] if detail else "no output"
        return f"`{' '.join(self.argv)}` exited with {self.returncode}: {tail}"


Runner = Callable[[Sequence[str], float], CommandResult]


def run_command(argv: Sequence[str], timeout: float) -> CommandResult:
    """Run `argv` without a shell; text output; missing executable -> return code 127."""
    args = tuple(argv)
    try:
        proc = subprocess.run(
            args,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            errors="replace",
        )
    except FileNotFoundError as err:
        return CommandResult(args, 127, "", str(err))
    except PermissionError as err:
        return CommandResult(args, 126, "", str(err))
    except subprocess.TimeoutExpired:
        return CommandResult(args, None, "", f"timed out after {timeout:g}s")
    return CommandResult(args, proc.returncode, proc.stdout, proc.stderr)


def find_executable(
    name: str, setting: Setting, env: Mapping[str, str] | None = None
) -> str | None:
    """The executable to use: `setting`'s when set (even if it does not exist), else PATH."""
    environ = os.environ if env is None else env
    override = setting.read(environ)
    if override:
        return override if os.access(override, os.X_OK) else None
    return shutil.which(name, path=environ.get("PATH"))
