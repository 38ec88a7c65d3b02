"""Every option acts or is refused: NaN and infinities are refused by every float option, and
options a resumed run or a plan would ignore are refused by name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.cli.options import FiniteFloat


def _commands() -> Iterator[tuple[list[str], click.Command]]:
    ctx = click.Context(main)
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            for sub in command.list_commands(ctx):
                inner = command.get_command(ctx, sub)
                assert inner is not None
                yield [name, sub], inner
        else:
            yield [name], command


FLOAT_OPTIONS = [
    (path, param.opts[0])
    for path, command in _commands()
    for param in command.params
    if isinstance(param, click.Option)
    and isinstance(param.type, click.FloatRange | type(click.FLOAT))
]


def test_every_float_option_is_a_finite_float() -> None:
    assert FLOAT_OPTIONS, "no float option found"
    for path, command in _commands():
        for param in command.params:
            if isinstance(param.type, click.FloatRange | type(click.FLOAT)):
                assert isinstance(param.type, FiniteFloat), f"repro {' '.join(path)} {param.opts}"


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "1e999"])
@pytest.mark.parametrize(("path", "option"), FLOAT_OPTIONS, ids=lambda x: str(x))
def test_float_options_refuse_non_finite(path: list[str], option: str, value: str) -> None:
    result = CliRunner().invoke(main, [*path, option, value])
    assert result.exit_code == 2
    assert "is not a finite number" in result.output


@pytest.mark.parametrize("command", [["sim", "serve"], ["run", "demo"], ["launch", "demo"]])
def test_port_99999_is_refused(command: list[str]) -> None:
    result = CliRunner().invoke(main, [*command, "--port", "99999"])
    assert result.exit_code == 2
    assert "99999 is not in the range" in result.output


REFUSED = [
    (["run", "demo", "--time-scale", "0.5"], "--time-scale acts only with --sim"),
    (["run", "demo", "--dry-run", "--json"], "--json cannot be combined with --dry-run"),
    (["run", "--resume", "{run}", "--sim"], "--sim cannot be combined with --resume"),
    (["run", "--resume", "{run}", "--sim", "demo"], "--sim cannot be combined with --resume"),
    (["run", "--resume", "{run}", "--time-scale", "2"], "--time-scale cannot be combined"),
    (["run", "--resume", "{run}", "--runs-dir", "x"], "--runs-dir cannot be combined"),
    (["run", "demo", "--resume", "{run}"], "demo cannot be combined with --resume"),
    (["bench", "demo", "--resume", "{run}"], "demo cannot be combined with --resume"),
    (["bench", "--resume", "{run}", "--concurrency", "1"], "--concurrency cannot be combined"),
    (["bench", "--resume", "{run}", "--prompts", "3"], "--prompts-per-level cannot be combined"),
    (["bench", "--resume", "{run}", "--input-len", "3"], "--input-len cannot be combined"),
    (["bench", "--resume", "{run}", "--output-len", "3"], "--output-len cannot be combined"),
    (["bench", "--resume", "{run}", "--endpoint", "chat"], "--endpoint cannot be combined"),
    (["bench", "--resume", "{run}", "--output", "o"], "--output cannot be combined"),
]


@pytest.mark.parametrize(("args", "message"), REFUSED, ids=lambda x: " ".join(x))
def test_an_option_that_would_not_act_is_refused(
    args: list[str], message: str, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    result = CliRunner().invoke(main, [a.format(run=run) for a in args])
    assert result.exit_code == 2, result.output
    assert message in result.output
