"""Every table keeps its numbers whole at 80 and at 200 columns (wide, or stacked)."""

from __future__ import annotations

import io
import json
import re

import pytest
from click.testing import CliRunner
from rich.console import Console

from repro.cli import main
from repro.cli.bench import bench_number, summary_table
from repro.report import build_report, load_runs
from repro.report.compare import number as compare_number
from repro.report.records import load_run
from repro.report.table import cell_text
from repro.tables import fit
from tests.report.conftest import Runs

WIDTHS = (80, 200)


def _cli(args: list[str], width: int) -> str:
    result = CliRunner().invoke(main, args, env={"COLUMNS": str(width)}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _whole(numbers: set[str], output: str) -> None:
    assert "…" not in output
    for number in numbers:
        assert re.search(rf"(?<![\d.]){re.escape(number)}(?![\d])", output), (number, output)
    for line in output.splitlines():
        assert len(line) <= 200


@pytest.mark.parametrize("width", WIDTHS)
def test_report_numbers_whole(runs: Runs, width: int) -> None:
    paths = [runs.ar, runs.dflash, runs.dflash_c48]
    for metric in ("output_throughput", "p99_ttft", "accept_length"):
        output = _cli(
            ["report", *map(str, paths), "--baseline", str(runs.ar), "--metric", metric], width
        )
        report = build_report(load_runs(paths), metric, load_runs([runs.ar])[0])
        numbers = set()
        for row in report.rows:
            for cell in row.cells.values():
                numbers |= set(re.findall(r"\d+\.\d+x?", cell_text(cell, report.metric, True)))
        _whole(numbers, output)
        assert max(len(line) for line in output.splitlines()) <= width


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_numbers_whole(runs: Runs, width: int) -> None:
    output = _cli(["compare", str(runs.ar), str(runs.dflash)], width)
    data = _cli(["compare", str(runs.ar), str(runs.dflash), "--json"], 200)
    numbers = {compare_number(p["b"]) for p in json.loads(data)["points"]}
    _whole(numbers, output)
    assert max(len(line) for line in output.splitlines()) <= width


@pytest.mark.parametrize("width", WIDTHS)
def test_recipe_list_whole(width: int) -> None:
    output = _cli(["recipe", "list"], width)
    assert "…" not in output
    assert "kimi26-ep4-dflash" in output


@pytest.mark.parametrize("width", WIDTHS)
def test_bench_table_numbers_whole(runs: Runs, width: int) -> None:
    levels = load_run(runs.dflash).levels
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(fit(summary_table(levels)))
    output = console.export_text()
    numbers = {bench_number(lv.output_throughput) for lv in levels}
    numbers |= {bench_number(lv.p99_e2e_latency_ms) for lv in levels if lv.p99_e2e_latency_ms}
    _whole(numbers, output)
    assert max(len(line) for line in output.splitlines()) <= width
