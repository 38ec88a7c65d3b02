"""A run whose acceptance SGLang forced (SGLANG_SIMULATE_ACC_LEN): bench and accept record it,
the acceptance is the forced value, and report and compare never show it unlabelled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from repro.cli import main
from repro.recipe import load_recipe
from repro.recipe.render import render_env
from repro.runfolder import RunFolder
from tests.report.simbench import REPO
from tests.support.simulator import Sim, Simulators

FAST = {"REPRO_SIM_TIME_SCALE": "0.05", "REPRO_SIM_LOAD_SECONDS": "0", "REPRO_SIM_SEED": "0"}
WIDE = {"COLUMNS": "200"}


def _forced_recipe(folder: Path) -> Path:
    """The demo, with its acceptance forced to 3 tokens per verify step."""
    data = yaml.safe_load((REPO / "recipes" / "demo.yaml").read_text())
    data["speculative"]["forced_acceptance"] = {"length": 3}
    path = folder / "demo-forced.yaml"
    path.write_text(yaml.safe_dump({**data, "name": "demo-forced"}))
    return path


def _serve(simulator: Simulators, recipe: Path, forced: bool = True) -> Sim:
    """The simulator as the recipe launches it (its rendered argv and environment)."""
    env = {
        k: v for k, v in render_env(load_recipe(str(recipe))).items() if forced or "ACC" not in k
    }
    args = ["--model-path", "repro-sim/tiny-chat", "--speculative-algorithm", "DFLASH",
            "--speculative-draft-model-path", "repro-sim/tiny-chat-dflash",
            "--speculative-num-draft-tokens", "8", "--context-length", "4096",
            "--max-running-requests", "64"]  # fmt: skip
    return simulator(args, {**env, **FAST})


def _run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), env=WIDE)
    assert result.exit_code == 0, result.output
    return result.output


def _bench(recipe: Path, url: str, out: Path, *extra: str) -> Path:
    _run("bench", str(recipe), "--url", url, "--concurrency", "1,4", "--prompts", "8",
         "--input-len", "32", "--output-len", "301", "--output", str(out), *extra)  # fmt: skip
    return out


@pytest.fixture(scope="module")
def records(simulator: Simulators, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("forced")
    recipe = _forced_recipe(tmp)
    out: dict[str, Path] = {"recipe": recipe}
    sim = _serve(simulator, recipe)
    try:
        out["forced"] = _bench(recipe, sim.url, tmp / "forced")
        _run("accept", str(recipe), "--url", sim.url, "--prompt-sets", "chat", "-n", "4",
             "--max-new-tokens", "301", "--output", str(tmp / "accepted"))  # fmt: skip
        out["accept"] = tmp / "accepted"
    finally:
        sim.stop()
    plain = _serve(simulator, recipe, forced=False)
    try:
        out["measured"] = _bench(REPO / "recipes" / "demo.yaml", plain.url, tmp / "measured")
        result = CliRunner().invoke(
            main,
            ["bench", "--url", plain.url, "--forced-acceptance", "3", "--concurrency", "1",
             "--prompts", "2", "--output", str(tmp / "refused")],
        )  # fmt: skip
        out["refused"] = tmp / "refused"
        (tmp / "refused.txt").write_text(f"{result.exit_code}\n{result.output}")
    finally:
        plain.stop()
    return out


def test_the_record_says_forced_and_holds_the_forced_acceptance(records: dict[str, Path]) -> None:
    run = json.loads(RunFolder(records["forced"]).run_file.read_text())
    assert run["forced_acceptance"] == {
        "length": 3.0,
        "method": "match-expected",
        "token_mode": "fixed",
    }
    levels = json.loads(RunFolder(records["forced"]).summary_file.read_text())["levels"]
    assert [lv["max_concurrency"] for lv in levels] == [1, 4]
    for level in levels:  # 1 prefill token + 100 steps of 3: within 2% at every level
        assert level["accept_length_pooled"] == pytest.approx(3.0, rel=0.02)
        assert level["accept_length"] == pytest.approx(3.0, rel=0.02)
    measured = json.loads(RunFolder(records["measured"]).run_file.read_text())
    assert measured["forced_acceptance"] is None


def test_report_and_compare_label_forced_acceptance(records: dict[str, Path]) -> None:
    forced, measured = str(records["forced"]), str(records["measured"])
    shown = _run("report", forced, measured, "--metric", "accept_length")
    assert "demo-forced (forced 3)" in shown
    rows = json.loads(_run("report", forced, measured, "--format", "json"))
    by_recipe = {row["recipe"]: row for row in rows["rows"]}
    assert by_recipe["demo-forced"]["forced"] == "forced 3"
    assert by_recipe["demo"]["forced"] is None
    compared = _run("compare", measured, forced)
    assert "acceptance: A measured, B forced 3" in compared
    data = json.loads(_run("compare", measured, forced, "--json"))
    assert (data["a_forced"], data["b_forced"]) == (None, "forced 3")


def test_accept_records_and_shows_forced(records: dict[str, Path]) -> None:
    results = json.loads(RunFolder(records["accept"]).accept_file.read_text())
    assert results["forced_acceptance"]["length"] == 3.0
    [chat] = results["sets"]
    assert chat["accept_length"] == pytest.approx(3.0, rel=0.02)
    shown = _run("report", str(records["accept"]))
    assert "(forced 3)" in shown


def test_a_declared_forcing_the_simulator_contradicts_is_refused(
    records: dict[str, Path],
) -> None:
    code, output = (records["refused"].parent / "refused.txt").read_text().split("\n", 1)
    assert code != "0"
    assert "the forced acceptance disagrees between sources" in " ".join(output.split())
    assert "Traceback" not in output
    assert not records["refused"].exists()  # refused before any folder was made


@pytest.mark.parametrize("value", ["0.5", "4:mean", "4:multinomial:real", "nan", "4:a:b:c"])
def test_a_bad_forced_acceptance_is_one_usage_line(value: str) -> None:
    result = CliRunner().invoke(
        main, ["bench", "--url", "http://127.0.0.1:9", "--forced-acceptance", value]
    )
    assert result.exit_code == 2
    assert "--forced-acceptance" in result.output and "Traceback" not in result.output
