"""`repro accept --accuracy` against the simulator answering a gsm8k-style set from its
answer key (REPRO_SIM_ANSWER_KEY): a lossless recipe passes the gate, a planted regression
(REPRO_SIM_WRONG_ANSWERS) is flagged against its baseline and across two run folders."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hubserver import HubServer
from hubserver.benchsets import parquet
from repro.runfolder import RunFolder
from tests.bench.hubcli import hub_cli
from tests.bench.simserver import DFLASH, SimServer

QUESTIONS = [f"Ada has {i} apples and buys {i + 3} more. How many apples now?" for i in range(30)]
KEY = [f"She has {i} + {i + 3} = {2 * i + 3} apples.\n#### {2 * i + 3}" for i in range(30)]
PROMPTS = 30


@pytest.fixture(scope="module")
def hub() -> Iterator[HubServer]:
    with HubServer() as server:
        server.add_dataset("openai/gsm8k", {
            "main/test-00000-of-00001.parquet": parquet({"question": QUESTIONS, "answer": KEY}),
        })  # fmt: skip
        yield server


@pytest.fixture(scope="module")
def sims(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, SimServer]]:
    """The recipe (DFLASH) as it should answer and with a planted regression, and its
    baseline without a drafter: all answering from the key."""
    logs = tmp_path_factory.mktemp("sims")
    key = logs / "key.jsonl"
    key.write_text("".join(json.dumps({"question": q, "answer": a}) + "\n"
                           for q, a in zip(QUESTIONS, KEY, strict=True)))  # fmt: skip
    env = {"REPRO_SIM_ANSWER_KEY": str(key), "REPRO_SIM_TIME_SCALE": "0"}
    servers = {
        "spec": SimServer(logs / "spec.log", *DFLASH, **env),
        "regressed": SimServer(logs / "bad.log", *DFLASH, **env, REPRO_SIM_WRONG_ANSWERS="0.5"),
        "plain": SimServer(logs / "plain.log", **env),
        "forced": SimServer(logs / "forced.log", *DFLASH, **env, SGLANG_SIMULATE_ACC_LEN="3"),
    }
    yield servers
    for server in servers.values():
        server.stop()


def _accuracy(tmp_path: Path, hub: HubServer, url: str, *extra: str) -> tuple[int, dict, str]:
    res = hub_cli(tmp_path, hub, "accept", "demo", "--url", url, "--prompt-sets", "gsm8k",
                  "-n", str(PROMPTS), "--max-new-tokens", "32", "--accuracy", "--json",
                  *extra)  # fmt: skip
    (doc,) = json.loads(res.stdout[res.stdout.index("[") :])
    return res.returncode, doc, res.stderr


def test_a_lossless_recipe_answers_as_its_baseline(
    sims: dict[str, SimServer], hub: HubServer, tmp_path: Path
) -> None:
    code, doc, stderr = _accuracy(tmp_path, hub, sims["spec"].url, "--baseline", sims["plain"].url)
    assert code == 0, stderr
    (scored,), (base,) = doc["accuracy"]["sets"], doc["accuracy"]["baseline_sets"]
    assert scored["correct"] == base["correct"] == PROMPTS and scored["accuracy"] == 1.0
    # the first prompt warms up; the measured ones cycle through the set from the second
    assert scored["answered"] == scored["expected"] == [str(2 * (i % 30) + 3) for i in range(1, 31)]
    assert 0.88 < scored["ci95"]["low"] < 1.0 == scored["ci95"]["high"]
    (check,) = doc["accuracy"]["checks"]
    assert check["verdict"] == "within noise" and check["difference"] == 0
    saved = RunFolder(tmp_path / doc["run_dir"]).read_accuracy()
    assert saved is not None and saved.sets[0].correct == PROMPTS
    assert "100% [89, 100]" in stderr  # the table, in percent with Wilson's interval


def test_a_planted_regression_is_flagged_against_the_baseline(
    sims: dict[str, SimServer], hub: HubServer, tmp_path: Path
) -> None:
    code, doc, stderr = _accuracy(
        tmp_path, hub, sims["regressed"].url, "--baseline", sims["plain"].url
    )
    assert code == 1
    assert "accuracy below its baseline beyond the 95% interval on gsm8k" in stderr
    (scored,) = doc["accuracy"]["sets"]
    assert 0.2 < scored["accuracy"] < 0.8  # about half answered N + 1
    wrong = [i for i, ok in enumerate(scored["correct_per_prompt"]) if not ok]
    assert all(int(scored["answered"][i]) == int(scored["expected"][i]) + 1 for i in wrong)
    (check,) = doc["accuracy"]["checks"]
    assert check["verdict"] == "regression" and check["ci95"]["high"] < 0
    assert "REGRESSION" in stderr
    assert RunFolder(tmp_path / doc["run_dir"]).accuracy_file.is_file()


def test_two_machines_compared_flag_the_one_that_answers_worse(
    sims: dict[str, SimServer], hub: HubServer, tmp_path: Path
) -> None:
    """Two run folders of one recipe (two machines on one lock): compare and report."""
    for machine in ("a", "b"):
        (tmp_path / machine).mkdir()
    _, good, _ = _accuracy(tmp_path / "a", hub, sims["spec"].url)
    _, bad, _ = _accuracy(tmp_path / "b", hub, sims["regressed"].url)
    runs = [str(tmp_path / "a" / good["run_dir"]), str(tmp_path / "b" / bad["run_dir"])]
    same = hub_cli(tmp_path, hub, "compare", runs[0], runs[0], "--json")
    assert same.returncode == 0, same.stderr
    assert json.loads(same.stdout)["accuracy"][0]["verdict"] == "within noise"
    worse = hub_cli(tmp_path, hub, "compare", *runs)
    assert worse.returncode == 1
    assert "REGRESSION" in worse.stdout and "accuracy below A's" in worse.stderr
    report = hub_cli(tmp_path, hub, "report", *runs, "--format", "json")
    assert report.returncode == 0, report.stderr
    entries = json.loads(report.stdout)
    good_correct, bad_correct = (e["accuracy"]["sets"][0]["correct"] for e in entries)
    assert good_correct == PROMPTS > bad_correct
    table = hub_cli(tmp_path, hub, "report", *runs)
    assert "Accuracy per prompt set" in table.stdout and "100% [89, 100]" in table.stdout
    page = hub_cli(tmp_path, hub, "report", *runs, "--format", "html", "-o", "page.html")
    assert page.returncode == 0, page.stderr
    html = (tmp_path / "page.html").read_text()
    assert "<h2>Accuracy per prompt set</h2>" in html and "100% [89, 100]" in html


def test_a_set_without_an_answer_key_is_refused_before_any_request(
    sims: dict[str, SimServer], hub: HubServer, tmp_path: Path
) -> None:
    res = hub_cli(tmp_path, hub, "accept", "demo", "--url", sims["spec"].url,
                  "--prompt-sets", "math", "--accuracy")  # fmt: skip
    assert res.returncode != 0
    assert "prompt set 'math' has no answer key" in res.stderr
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "runs").exists()


def test_a_forced_acceptance_server_is_not_scored(
    sims: dict[str, SimServer], hub: HubServer, tmp_path: Path
) -> None:
    """Forced acceptance commits tokens the model did not choose: no answer of it counts."""
    res = hub_cli(tmp_path, hub, "accept", "--url", sims["forced"].url, "--prompt-sets",
                  "gsm8k", "--accuracy")  # fmt: skip
    assert res.returncode == 1
    assert "forced acceptance (forced 3)" in res.stderr and "Traceback" not in res.stderr


def test_a_recipe_whose_accept_plan_asks_for_accuracy_scores_a_file_set(
    sims: dict[str, SimServer], hub: HubServer, tmp_path: Path
) -> None:
    """`accept: {accuracy: true}` (what `repro run` measures) on a gsm8k-style data file."""
    rows = [{"question": q, "answer": a} for q, a in zip(QUESTIONS, KEY, strict=True)]
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    recipe = tmp_path / "demo-accuracy.yaml"
    recipe.write_text(
        "extends: demo\naccept: {prompt_sets: [qa.jsonl], prompts: 8, max_new_tokens: 32, "
        "accuracy: true}\n"
    )
    res = hub_cli(tmp_path, hub, "accept", str(recipe), "--url", sims["spec"].url, "--json")
    assert res.returncode == 0, res.stderr
    (doc,) = json.loads(res.stdout[res.stdout.index("[") :])
    (scored,) = doc["accuracy"]["sets"]
    assert scored["prompt_set"] == "qa" and scored["correct"] == scored["asked"] == 8
    assert doc["protocol"]["accuracy"] is True
    assert doc["accuracy"]["checks"] == []  # no baseline: nothing to gate against
