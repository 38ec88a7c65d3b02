"""The command line's shape: help, version, and unknown commands that refuse clearly."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from repro import __version__
from repro.cli import main
from tests.support.cli import repro

REPO_ROOT = Path(__file__).resolve().parents[1]

PIPELINE_GROUPS = [
    "recipe",
    "lock",
    "fetch",
    "image",
    "launch",
    "doctor",
    "bench",
    "accept",
    "report",
    "run",
    "export",
]


def test_help_lists_every_pipeline_group() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for group in PIPELINE_GROUPS:
        assert f"  {group} " in result.output


def test_version_matches_package() -> None:
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert __version__ in result.output
    assert __version__ != "0.0.0+unknown"


def test_unknown_command_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["frobnicate"])
    assert result.exit_code == 2
    assert "No such command" in result.output


def test_a_command_loads_only_its_own_stage() -> None:
    """`repro run` and friends start fast: plotting and HTTP stacks load only when used."""
    import subprocess
    import sys

    code = (
        "import sys; from click.testing import CliRunner; from repro.cli import main; "
        "CliRunner().invoke(main, ['recipe', 'list']); "
        "print(sorted(m for m in ('matplotlib', 'huggingface_hub', 'aiohttp') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert loaded.stdout.strip() == "[]", loaded.stderr


def test_the_console_script_keeps_each_status_and_all_its_output(tmp_path: Path) -> None:
    """`repro` skips the interpreter's teardown (`repro.cli.entry`): what a command printed
    into a pipe still arrives whole, and each way out keeps its exit status."""
    listed = repro("recipe", "list", "--json", cwd=REPO_ROOT)
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) >= 1  # block-buffered into a pipe: flushed at exit
    missing = repro("fetch", "no-such-recipe", cwd=tmp_path)
    assert missing.returncode == 1
    assert "error: no recipe named 'no-such-recipe'" in missing.stderr
    usage = repro("fetch", "--no-such-option", cwd=tmp_path)
    assert usage.returncode == 2
    assert "No such option" in usage.stderr
