"""`repro compare` of two nine-level runs reads on one 80x50 screen: levels as rows, per
metric A, B and B/A, run names told apart, numbers whole; and at 200 columns too."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.report.compare import number
from repro.report.labels import distinct_pair
from tests.report.conftest import AR_ARGS, DFLASH_ARGS, _recipe
from tests.report.simbench import NO_LOAD, REPRO_SIM, run_bench
from tests.support.simulator import Simulators

NINE = "1,2,4,8,16,32,64,128,256"


@pytest.fixture(scope="module")
def nine(simulator: Simulators, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("nine")
    with ExitStack() as stack:
        paths = []
        for name, args, drafter in (("demo-ar", AR_ARGS, False), ("demo", DFLASH_ARGS, True)):
            sim = simulator(args, NO_LOAD, module=REPRO_SIM)
            stack.callback(sim.stop)
            recipe = _recipe(root, name, 1, drafter)
            paths.append(run_bench(recipe, sim.url, root / name, NINE))
    return paths[0], paths[1]


@pytest.mark.parametrize("width", [80, 200])
def test_compare_of_nine_levels_fits_the_screen(nine: tuple[Path, Path], width: int) -> None:
    a, b = nine
    args = ["compare", str(a), str(b)]
    result = CliRunner().invoke(main, args, env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= width
    if width == 80:
        assert len(lines) <= 50, result.output
    data = json.loads(CliRunner().invoke(main, [*args, "--json"]).output)
    for p in data["points"]:  # every value whole, and the ratio beside it
        assert number(p["a"]) in result.output and number(p["b"]) in result.output
    assert "demo-ar" in result.output and "B/A" in result.output


def test_long_run_names_keep_what_tells_them_apart() -> None:
    a, b = distinct_pair("kimi26-ep4-dflash 12-03 07:53:12", "kimi26-ep4-dflash-long 12-03", 20)
    assert a != b and len(a) <= 20 and len(b) <= 20
    assert a.startswith("…") and "long" in b


def test_a_metric_one_run_lacks_says_so(nine: tuple[Path, Path]) -> None:
    a, b = nine
    args = ["compare", str(a), str(b), "--metric", "accept_length"]
    result = CliRunner().invoke(main, args, env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "accept_length: not measured by demo-ar (no speculative decoding)" in result.output
