"""`repro accept` against the simulator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repro.bench.accept.runner import AcceptOptions, run_accept
from repro.bench.prompts.chattemplate import BUILTIN_CHAT_TEMPLATE, ChatTemplate
from repro.bench.prompts.sets import load_prompt_set
from repro.bench.target import BenchTarget
from repro.cli import main
from repro.errors import ReproError
from repro.runfolder import RunFolder
from tests.support.simulator import Sim


def test_shipped_prompt_sets_and_template() -> None:
    for name in ("math", "code", "chat"):
        assert len(load_prompt_set(name).prompts) >= 30
    text = ChatTemplate(BUILTIN_CHAT_TEMPLATE).render("hi", thinking=False)
    assert text.startswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")


def test_accept_per_prompt_set(sim_spec: Sim, demo: Any, runs: Path) -> None:
    shown: list[str] = []
    opts = AcceptOptions(
        urls=[sim_spec.url], prompt_sets=["math", "code"], prompts=6, max_new_tokens=24,
        runs_dir=runs, progress=shown.append,
    )  # fmt: skip
    (result,) = run_accept([BenchTarget.from_recipe(demo)], opts)
    # The spinner says which set of how many, and how many of its prompts are done.
    assert "demo: set math (1/2): 3/6 prompts" in shown
    assert shown[-1] == "demo: set code (2/2): 6/6 prompts"
    doc = json.loads(RunFolder(result.run_dir).accept_file.read_text())
    assert doc["simulated"] is True
    assert [s["prompt_set"] for s in doc["sets"]] == ["math", "code"]
    for s in doc["sets"]:
        assert s["prompts"] == 6 and len(s["accept_length_per_prompt"]) == 6
        assert s["accept_length"] == pytest.approx(s["completion_tokens"] / s["spec_verify_ct"])
        assert 1.0 < s["accept_length"] <= 8.0
    run = json.loads(RunFolder(result.run_dir).run_file.read_text())
    assert run["kind"] == "accept" and run["status"] == "complete"


def test_accept_refuses_a_non_speculative_server(sim_plain: Sim, demo: Any, runs: Path) -> None:
    opts = AcceptOptions(urls=[sim_plain.url], prompts=2, max_new_tokens=8, runs_dir=runs)
    with pytest.raises(ReproError, match="speculative"):
        run_accept([BenchTarget.from_recipe(demo)], opts)


def test_accept_refuses_an_empty_prompt_file(sim_spec: Sim, demo: Any, tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    opts = AcceptOptions(urls=[sim_spec.url], prompt_sets=[str(empty)])
    with pytest.raises(ReproError, match="empty"):
        run_accept([BenchTarget.from_recipe(demo)], opts)


def test_cli_side_by_side(
    sim_spec: Sim, tmp_path: Path, repo_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPRO_RECIPES_DIR", str(repo_root / "recipes"))
    monkeypatch.chdir(tmp_path)  # the run folders go to ./runs: keep them out of the checkout
    prompts = tmp_path / "mine.jsonl"
    prompts.write_text('{"prompt": "Solve 3x + 1 = 10."}\n"Write a python function."\n')
    res = CliRunner().invoke(
        main,
        ["accept", "demo", "demo", "--url", sim_spec.url, "--url", sim_spec.url,
         "--prompts", f"chat,{prompts}", "-n", "2", "--max-new-tokens", "8", "--json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    # the old spelling of --prompt-sets still works, and says so
    assert "accept --prompts is deprecated: use --prompt-sets" in res.stderr
    doc = json.loads(res.stdout[res.stdout.index("[") :])
    assert len(doc) == 2 and [s["prompt_set"] for s in doc[0]["sets"]] == ["chat", "mine"]
    keys = ("prompt_set", "accept_length", "accept_length_per_prompt", "accept_histogram")
    same = [[{k: s[k] for k in keys} for s in d["sets"]] for d in doc]
    assert same[0] == same[1]  # temperature 0, same seed: same drafts accepted
    assert all(d["verdict"] == "within noise" for d in doc[0]["comparison"])


def test_a_bare_url_is_measured_as_it_answers(
    sim_spec: Sim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No recipe: a server someone else started, its drafter measured and its identity
    recorded as found."""
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(
        main,
        ["accept", "--url", sim_spec.url, "--prompt-sets", "math", "-n", "2",
         "--max-new-tokens", "8", "--json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "deprecated" not in res.stderr
    [doc] = json.loads(res.stdout[res.stdout.index("[") :])
    [math] = doc["sets"]
    assert math["prompts"] == 2 and math["accept_length"] > 1.0 and not math["reasons"]
    run_dir = Path(doc["run_dir"])
    run = json.loads(RunFolder(run_dir).run_file.read_text())
    assert run["status"] == "complete"
    assert run["server_identity"]["found"]["model_path"] == "repro-sim/tiny-chat"
    assert json.loads(RunFolder(run_dir).recipe_file.read_text())["url"] == sim_spec.url


def test_accept_needs_a_recipe_or_a_url(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["accept"])
    assert res.exit_code == 1 and "give a RECIPE or a server --url" in res.stderr
