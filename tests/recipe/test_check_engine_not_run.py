"""`repro recipe check` where SGLang's engine is not installed (after `make demo`): the count is
followed by one line saying SGLang's start-up did not run and how to install it, and
`--strict` fails. The simulator's recipes have no start-up to run: they pass either way."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from repro.cli import main
from tests.recipe.conftest import Project

NOT_RUN = "SGLang's start-up did not run for 1 recipe: not installed (make sglang-engine)"


def _check(tmp_path: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["recipe", "check", "--python", str(tmp_path / "none"), *args])


def test_check_without_the_engine_says_so_and_strict_fails(
    project: Project, tmp_path: Path
) -> None:
    result = _check(tmp_path, "kimi26-tp8-nightly", "demo")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-2:] == ["2/2 recipes pass", NOT_RUN]
    strict = _check(tmp_path, "--strict", "kimi26-tp8-nightly", "demo")
    assert strict.exit_code == 1
    assert strict.stdout.splitlines()[-2:] == ["1/2 recipes pass", NOT_RUN]


def test_the_line_goes_to_stderr_with_json(project: Project, tmp_path: Path) -> None:
    result = _check(tmp_path, "--json", "--strict", "kimi26-tp8-nightly")
    assert result.exit_code == 1
    [nightly] = json.loads(result.stdout)
    assert nightly["ok"] and "not installed" in nightly["engine"]["not_run"]
    assert NOT_RUN in result.stderr


def test_the_simulators_recipe_has_no_start_up_to_miss(project: Project, tmp_path: Path) -> None:
    result = _check(tmp_path, "--strict", "demo")
    assert result.exit_code == 0, result.output
    assert "did not run" not in result.output


def test_no_engine_asked_for_is_not_a_missing_one(project: Project, tmp_path: Path) -> None:
    result = _check(tmp_path, "--no-engine", "--strict", "kimi26-tp8-nightly")
    assert result.exit_code == 0, result.output
    assert "did not run" not in result.output
