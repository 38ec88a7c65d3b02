"""`repro compare A B --at-interactivity`: tok/s per GPU at equal tok/s per user."""

from __future__ import annotations

import json

from click.testing import CliRunner

from repro.cli import main
from repro.report import load_runs

from .conftest import Runs


def test_each_speed_passes_through_the_measured_levels(runs: Runs) -> None:
    [a] = load_runs([runs.ar])
    speeds = sorted(lv.output_throughput_per_user for lv in a.levels if lv.valid)
    middle = speeds[len(speeds) // 2]
    result = CliRunner().invoke(
        main,
        [
            "compare",
            str(runs.ar),
            str(runs.dflash),
            "--at-interactivity",
            f"{middle!r},1e9",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    at_level, beyond = json.loads(result.output)
    [level] = [lv for lv in a.levels if lv.output_throughput_per_user == middle]
    expected = level.output_throughput_per_gpu or level.output_throughput
    assert abs(at_level["a_tok_s_per_gpu"] - expected) < 1e-6 * expected
    if at_level["b_tok_s_per_gpu"] is not None:
        assert at_level["ratio"] == at_level["b_tok_s_per_gpu"] / at_level["a_tok_s_per_gpu"]
    # nobody measured a billion tok/s per user: nothing is extrapolated there
    assert beyond["a_tok_s_per_gpu"] is None and beyond["ratio"] is None


def test_the_table_says_where_a_run_has_no_levels(runs: Runs) -> None:
    result = CliRunner().invoke(
        main, ["compare", str(runs.ar), str(runs.dflash), "--at-interactivity", "1e9"]
    )
    assert result.exit_code == 0, result.output
    assert "equal interactivity" in result.output and "outside what it measured" in result.output


def test_a_speed_that_is_not_a_number_is_a_usage_error(runs: Runs) -> None:
    result = CliRunner().invoke(
        main, ["compare", str(runs.ar), str(runs.dflash), "--at-interactivity", "fast"]
    )
    assert result.exit_code == 2
    assert "expected positive tok/s per user" in result.output
