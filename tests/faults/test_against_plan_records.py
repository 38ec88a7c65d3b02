"""Issue 70: records and plans are checked before they are believed. `repro campaign report
--against-plan` refuses a prediction in plan.json that is not a tok/s a server can reach (NaN,
infinite, negative, 1e308), naming the file, the point and the field, instead of printing it
as 0.0, inf or a 300-digit number. An index.json that gives a point another point's run
folder is refused, naming the point and the folder, instead of reporting each point with the
other's numbers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from rich.console import Console

from repro.campaign.execute import start_campaign
from repro.cli import main
from tests.campaign.demo import demo_campaign

RUN = Path(__file__).resolve().parent.parent / "fixtures" / "earlier-runs" / "v2-run"
SMALL, BIG = "demo.cap-small", "demo.cap-big"


def _recipe_name(name: str) -> Any:
    return lambda run: run.update(recipe_name=name)


def _edit(path: Path, change: Any) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


@pytest.fixture
def folder(tmp_path: Path, repo_root: Path) -> Path:
    """A planned demo campaign whose two points are done, each with a `repro run` folder of
    its own (a recorded run, its recipe named as the point's run names it)."""
    made, plan, _index = start_campaign(
        demo_campaign(tmp_path, repo_root), tmp_path / "campaigns", Console(quiet=True)
    )
    assert [p.name for p in plan.points] == [SMALL, BIG]
    assert all(p.predicted for p in plan.points)  # the plan predicts both
    run_dirs = {}
    for point in (SMALL, BIG):
        relative = f"points/{point}/20261205T011901Z-{point}"
        shutil.copytree(RUN, made.path / relative)
        for part in ("bench", "accept"):
            _edit(made.path / relative / part / "run.json", _recipe_name(point))
        run_dirs[point] = relative

    def done(index: dict[str, Any]) -> None:
        for state in index["points"]:
            state.update(status="done", run_dir=run_dirs[state["name"]])

    _edit(made.index_file, done)
    return made.path


def _against(folder: Path) -> Result:
    return CliRunner().invoke(
        main, ["campaign", "report", str(folder), "--against-plan", "--no-html"]
    )


def _refused(result: Result) -> str:
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    return result.output.strip().splitlines()[0]


def test_the_unedited_folder_is_reported(folder: Path) -> None:
    result = _against(folder)
    assert result.exit_code == 0, result.output
    assert f"{SMALL}:\n  c=1 " in result.output


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0, 1e308])
def test_a_prediction_no_server_reaches_is_refused(folder: Path, value: float) -> None:
    def poison(plan: dict[str, Any]) -> None:
        plan["points"][1]["predicted"][0]["output_throughput"] = value

    _edit(folder / "plan.json", poison)
    error = _refused(_against(folder))
    assert f"{folder / 'plan.json'}: point {BIG}: predicted[0].output_throughput" in error
    assert repr(value) in error, error


def test_an_index_that_swaps_two_points_run_folders_is_refused(folder: Path) -> None:
    def swap(index: dict[str, Any]) -> None:
        small, big = index["points"]
        small["run_dir"], big["run_dir"] = big["run_dir"], small["run_dir"]

    _edit(folder / "index.json", swap)
    error = _refused(_against(folder))
    assert f"{folder / 'index.json'}: point {SMALL}" in error, error
    assert f"points/{BIG}/20261205T011901Z-{BIG}" in error, error
    report = CliRunner().invoke(main, ["campaign", "report", str(folder), "--no-html"])
    assert _refused(report) == error  # the decision is not made on them either


def test_a_run_folder_of_another_recipe_is_refused(folder: Path) -> None:
    """A run folder in the point's own place whose record ran another recipe (moved there)."""
    run = folder / f"points/{SMALL}/20261205T011901Z-{SMALL}/bench/run.json"
    _edit(run, _recipe_name(BIG))
    error = _refused(_against(folder))
    assert f"{folder / 'index.json'}: point {SMALL}" in error, error
    assert f"ran recipe '{BIG}'" in error, error
