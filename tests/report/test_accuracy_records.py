"""accuracy.json read back for reports: a `repro run` folder's accept/ part shows with its
bench/ part, and a corrupt file is one line naming it, never a traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from repro.accuracygate import check_accuracy
from repro.cli import main
from repro.proportions import wilson
from repro.report import load_run
from repro.runfolder import RunFolder
from repro.schema.accuracy import AccuracyResults, AccuracySet

EARLIER = Path(__file__).parents[1] / "fixtures" / "earlier-runs"


def _scored(correct: int, asked: int) -> AccuracySet:
    return AccuracySet(
        prompt_set="gsm8k", scorer="test", asked=asked, correct=correct,
        accuracy=correct / asked, ci95=wilson(correct, asked),
    )  # fmt: skip


def _run_with_accuracy(tmp_path: Path) -> Path:
    run = Path(shutil.copytree(EARLIER / "v2-run", tmp_path / "run"))
    recipe, base = _scored(10, 30), _scored(29, 30)
    results = AccuracyResults(
        recipe_name="demo", baseline="demo-plain", sets=[recipe], baseline_sets=[base],
        checks=[check_accuracy("demo-plain", base, "demo", recipe)],
    )  # fmt: skip
    RunFolder(run).accept.write_accuracy(results)
    return run


def test_a_run_folder_reports_the_accuracy_of_its_accept_part(tmp_path: Path) -> None:
    run = _run_with_accuracy(tmp_path)
    loaded = load_run(run)
    assert loaded.accuracy is not None and loaded.accuracy.regressions
    shown = CliRunner().invoke(main, ["report", str(run)], terminal_width=160)
    assert shown.exit_code == 0, shown.output
    assert "33% [19, 51]" in shown.output and "97% [83, 99]" in shown.output
    assert "REGRESSION" in shown.output


def test_a_corrupt_accuracy_file_is_one_line(tmp_path: Path) -> None:
    run = _run_with_accuracy(tmp_path)
    path = RunFolder(run).accept.accuracy_file
    path.write_text('{"recipe_name": "demo", "sets": "all right"}')
    shown = CliRunner().invoke(main, ["report", str(run)])
    assert shown.exit_code == 1
    assert str(path) in shown.output and "Traceback" not in shown.output
