"""Every bench and accept checks which server answers before measuring: two simulators with
different drafters on different ports, two recipes naming them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from repro.cli import main
from repro.runfolder import RunFolder
from tests.support.simulator import TINY_CHAT, Sim, Simulators

DRAFTERS = {"drafter-a": "repro-sim/tiny-chat-dflash", "drafter-b": "repro-sim/tiny-chat-dflash-b"}


@pytest.fixture(scope="module")
def servers(simulator: Simulators) -> Iterator[dict[str, Sim]]:
    env = {"REPRO_SIM_LOAD_SECONDS": "0", "REPRO_SIM_TIME_SCALE": "0.3"}
    started = {
        name: simulator(
            [*TINY_CHAT, "--revision", "main",
             "--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", drafter,
             "--speculative-num-draft-tokens", "8"],
            env, wait=False,
        )
        for name, drafter in DRAFTERS.items()
    }  # fmt: skip
    try:
        yield {name: sim.wait_ready() for name, sim in started.items()}
    finally:
        for sim in started.values():
            sim.stop()


@pytest.fixture()
def workdir(
    servers: dict[str, Sim], tmp_path: Path, repo_root: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Recipes drafter-a and drafter-b (the demo, each with its drafter and its server's
    port) in a recipes folder of their own; no deployment repro launched."""
    demo = yaml.safe_load((repo_root / "recipes" / "demo.yaml").read_text())
    recipes = tmp_path / "recipes"
    recipes.mkdir()
    for name, drafter in DRAFTERS.items():
        doc = {**demo, "drafter": {"repo": drafter, "revision": "main"}}
        doc["server"] = {**doc["server"], "port": servers[name].port}
        (recipes / f"{name}.yaml").write_text(yaml.safe_dump(doc))
    monkeypatch.setenv("REPRO_RECIPES_DIR", str(recipes))
    monkeypatch.setenv("REPRO_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _server_info(run_dir: str) -> dict[str, object]:
    return json.loads(RunFolder(run_dir).server_info_file.read_text())


def test_accept_a_b_measures_each_recipes_own_server(workdir: Path) -> None:
    res = CliRunner().invoke(
        main, ["accept", "drafter-a", "drafter-b", "--prompt-sets", "math", "-n", "2",
               "--max-new-tokens", "8"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    run_a, run_b = res.stdout.split()
    assert _server_info(run_a)["speculative_draft_model_path"] == DRAFTERS["drafter-a"]
    assert _server_info(run_b)["speculative_draft_model_path"] == DRAFTERS["drafter-b"]
    run = json.loads(RunFolder(run_b).run_file.read_text())
    assert run["server_identity"]["checked_against"] == "recipe"
    assert "speculative_draft_model_path" in run["server_identity"]["checked"]


@pytest.mark.parametrize("command", ["accept", "bench"])
def test_measuring_the_wrong_server_is_refused(
    workdir: Path, servers: dict[str, Sim], command: str
) -> None:
    res = CliRunner().invoke(main, [command, "drafter-b", "--url", servers["drafter-a"].url])
    assert res.exit_code != 0
    assert (
        f"the server at {servers['drafter-a'].url} is not drafter-b: the recipe wants "
        f"speculative_draft_model_path={DRAFTERS['drafter-b']}, the server runs "
        f"speculative_draft_model_path={DRAFTERS['drafter-a']}"
    ) in res.output
    assert not (workdir / "runs").exists()  # nothing half-written


def test_url_alone_records_what_it_found(workdir: Path, servers: dict[str, Sim]) -> None:
    res = CliRunner().invoke(
        main, ["bench", "--url", servers["drafter-b"].url, "--concurrency", "1", "--prompts", "2",
               "--dataset", "random", "--input-len", "8", "--output-len", "4"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    run = json.loads(RunFolder(res.stdout.split()[-1]).run_file.read_text())
    identity = run["server_identity"]
    assert identity["checked_against"] is None
    assert identity["found"]["speculative_draft_model_path"] == DRAFTERS["drafter-b"]
    assert identity["found"]["model_path"] == "repro-sim/tiny-chat"
    assert identity["found"]["speculative_num_draft_tokens"] == 8


def test_another_model_revision_is_refused(workdir: Path, servers: dict[str, Sim]) -> None:
    """The server runs `main`; a recipe pinned to a commit is not measured there."""
    sha = "0123456789abcdef0123456789abcdef01234567"
    doc = yaml.safe_load((workdir / "recipes" / "drafter-a.yaml").read_text())
    doc["model"] = {**doc["model"], "revision": sha}
    (workdir / "recipes" / "pinned.yaml").write_text(yaml.safe_dump(doc))
    res = CliRunner().invoke(main, ["bench", "pinned", "--url", servers["drafter-a"].url])
    assert res.exit_code != 0
    assert f"the recipe wants revision={sha}, the server runs revision=main" in res.output


def test_a_resumed_run_measures_the_server_it_started_with(
    workdir: Path, servers: dict[str, Sim]
) -> None:
    base = ["--concurrency", "1", "--prompts", "2", "--dataset", "random", "--input-len", "8",
            "--output-len", "4"]  # fmt: skip
    res = CliRunner().invoke(main, ["bench", "--url", servers["drafter-a"].url, *base])
    assert res.exit_code == 0, res.output
    run_dir = res.stdout.split()[-1]
    res = CliRunner().invoke(
        main, ["bench", "--resume", run_dir, "--url", servers["drafter-b"].url]
    )
    assert res.exit_code != 0
    assert "is not the one this run measured: it started with speculative_draft_model_path=" in (
        res.output
    )


def test_a_baseline_recipe_is_checked_and_recorded_by_the_name_given(
    workdir: Path, servers: dict[str, Sim]
) -> None:
    doc = yaml.safe_load((workdir / "recipes" / "drafter-b.yaml").read_text())
    doc["server"]["port"] = servers["drafter-a"].port  # drafter-b's recipe, drafter-a's server
    (workdir / "recipes" / "misplaced.yaml").write_text(yaml.safe_dump(doc))
    args = ["accept", "drafter-a", "--prompt-sets", "math", "-n", "2", "--max-new-tokens", "8"]
    res = CliRunner().invoke(main, [*args, "--baseline", "misplaced"])
    assert res.exit_code != 0
    assert f"the server at {servers['drafter-a'].url} is not misplaced" in res.output
    res = CliRunner().invoke(main, [*args, "--baseline", "drafter-b"])
    assert res.exit_code == 0, res.output
    accepted = json.loads(RunFolder(res.stdout.split()[-1]).accept_file.read_text())
    assert accepted["protocol"]["baseline"] == "drafter-b"


def test_a_locked_recipe_is_measured_against_its_current_lock(
    workdir: Path, repo_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`repro launch` runs locks/<recipe>.lock.json: bench and accept check against it and
    keep it in the run folder."""
    (workdir / "images").symlink_to(repo_root / "images")  # the recipes' image specs
    monkeypatch.setenv("REPRO_LOCKS_DIR", str(workdir / "locks"))
    locked = CliRunner().invoke(main, ["lock", "drafter-a"])
    assert locked.exit_code == 0, locked.output
    lock = json.loads((workdir / "locks" / "drafter-a.lock.json").read_text())
    res = CliRunner().invoke(
        main, ["bench", "drafter-a", "--concurrency", "1", "--prompts", "2", "--dataset",
               "random", "--input-len", "8", "--output-len", "4"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    run_dir = Path(res.stdout.split()[-1])
    assert json.loads(RunFolder(run_dir).run_file.read_text())["server_identity"][
        "checked_against"
    ] == ("lock")
    assert json.loads(RunFolder(run_dir).lock_file.read_text()) == lock
    res = CliRunner().invoke(
        main, ["accept", "drafter-a", "--prompt-sets", "math", "-n", "2", "--max-new-tokens", "8"]
    )
    assert res.exit_code == 0, res.output
    assert json.loads(RunFolder(res.stdout.split()[-1]).lock_file.read_text()) == lock
