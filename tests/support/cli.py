"""Running the real `repro` CLI in a subprocess, with state and locks private to one test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPRO = str(Path(sys.executable).parent / "repro")


def isolated_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a `repro` call whose deployments and locks stay under tmp_path."""
    return {
        **os.environ,
        "REPRO_STATE_DIR": str(tmp_path / "state"),
        "REPRO_LOCKS_DIR": str(tmp_path / "locks"),
    }


def repro(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """`repro ARGS` in a subprocess (env: this process's when None), output captured."""
    return subprocess.run(
        [REPRO, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def invoke(*args: str) -> tuple[int, str]:
    """`repro ARGS` in this process (click's runner: monkeypatched settings apply); its exit
    code and output."""
    from click.testing import CliRunner

    from repro.cli import main

    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output
