"""Every command's --help reads at 80 columns (click wraps the prose; long choice lists are
summarized) and still at 200."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from repro.cli import main


def _commands() -> list[list[str]]:
    found: list[list[str]] = [[]]
    ctx = click.Context(main)
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        found.append([name])
        if isinstance(command, click.Group):
            found += [[name, sub] for sub in command.list_commands(ctx)]
    return found


@pytest.mark.parametrize("width", [80, 200])
def test_every_help_fits_the_terminal(width: int) -> None:
    for args in _commands():
        result = CliRunner().invoke(main, [*args, "--help"], terminal_width=width)
        assert result.exit_code == 0, (args, result.output)
        long = [line for line in result.output.splitlines() if len(line) > width]
        assert not long, (args, long)
        assert "[accept_length|" not in result.output  # no 40-choice blob


def test_report_help_names_the_metrics_in_a_sentence() -> None:
    result = CliRunner().invoke(main, ["report", "--help"], terminal_width=80)
    assert "--metric METRIC" in result.output and "p99_" in result.output


def test_the_bump_example_names_a_shipped_spec(repo_root: Path) -> None:
    result = CliRunner().invoke(main, ["image", "bump", "--help"], terminal_width=200)
    [example] = [line.split() for line in result.output.splitlines() if "repro image bump" in line]
    assert (repo_root / "images" / f"{example[3]}.yaml").is_file(), example
