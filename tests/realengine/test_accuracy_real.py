"""`repro accept --accuracy` against SGLang 0.5.23's own CPU engine: the whole pipeline (a
gsm8k-style file with its answer key, chat-formatted /generate requests, each response's
text scored, accuracy.json, the gate against a baseline, report and compare). The tiny model
has random weights, so it answers nothing right: the point is that every step runs on the
real server's responses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.realengine.engine import Engine
from repro.runfolder import RunFolder

pytestmark = pytest.mark.real_sglang

PROMPTS = 4


def test_the_accuracy_gate_runs_on_sglangs_engine(
    sglang_engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # run folders go to ./runs
    questions = tmp_path / "arith.jsonl"
    questions.write_text("".join(
        json.dumps({"question": f"What is {i} plus {i}?", "answer": f"#### {2 * i}"}) + "\n"
        for i in range(1, 6)
    ))  # fmt: skip
    url = sglang_engine.url
    res = CliRunner().invoke(main, [
        "accept", "--url", url, "--baseline", url, "--prompt-sets", str(questions),
        "-n", str(PROMPTS), "--max-new-tokens", "16", "--accuracy", "--json",
    ])  # fmt: skip
    assert res.exit_code == 0, res.output
    (doc,) = json.loads(res.stdout[res.stdout.index("[") :])
    (scored,), (base,) = doc["accuracy"]["sets"], doc["accuracy"]["baseline_sets"]
    assert scored["asked"] == PROMPTS and scored["failed"] == 0
    assert scored["expected"] == ["4", "6", "8", "10"]  # after the warm-up prompt
    assert scored["accuracy"] == scored["correct"] / PROMPTS <= 0.5  # random weights
    assert scored["ci95"]["low"] <= scored["accuracy"] <= scored["ci95"]["high"]
    # temperature 0 on one server: the baseline gives the same answers, within noise
    assert base["answered"] == scored["answered"]
    assert doc["accuracy"]["checks"][0]["verdict"] == "within noise"
    run = Path(doc["run_dir"])
    assert RunFolder(run).read_accuracy() is not None
    report = CliRunner().invoke(main, ["report", str(run)], terminal_width=120)
    assert report.exit_code == 0, report.output
    assert "Accuracy per prompt set" in report.output and "arith" in report.output
    compared = CliRunner().invoke(main, ["compare", str(run), str(run), "--json"])
    assert compared.exit_code == 0, compared.output
    assert json.loads(compared.output)["accuracy"][0]["verdict"] == "within noise"
