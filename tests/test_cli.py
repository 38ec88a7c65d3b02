"""The command line's shape: help, version, and unknown commands that refuse clearly."""

from __future__ import annotations

from click.testing import CliRunner

from repro import __version__
from repro.cli import main

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
