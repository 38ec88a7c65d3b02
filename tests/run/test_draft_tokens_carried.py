"""One resolution, carried: the draft tokens per step that SGLang's own start-up resolves for a
DFlash recipe are what the simulator serves and what the plan predicts with, and an assumed
number says so (issue: the simulator served 16 where SGLang resolves 8)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.lock import load_locked
from repro.recipe.render import render_env, render_server_argv
from repro.run.simulate import simulated_recipe
from tests.recipe.conftest import Project
from tests.support.simulator import Simulators

pytestmark = pytest.mark.real_sglang

RECIPE = "kimi26-ep4-dflash"
CAMPAIGN = Path(__file__).resolve().parents[2] / "campaigns" / "kimi26-ep4-drafters.yaml"


@pytest.fixture
def project(engine_project: Project) -> Project:
    return engine_project


def _sglang_resolves(recipe: str) -> int:
    """What SGLang's own start-up (the engine dry-start) resolves the draft tokens to."""
    result = CliRunner().invoke(
        main, ["recipe", "render", "--resolved", recipe, "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    resolved = json.loads(result.output)["resolved"]
    # the drafter twin says where its block size comes from: assumed, with no lock here
    assert any("block size 8 (assumed:" in line for line in resolved["stand_ins"])
    return int(resolved["changed"]["speculative_num_draft_tokens"]["resolved"])


def _simulator_serves(recipe: str, run_dir: Path, simulator: Simulators) -> dict[str, object]:
    """/server_info of the simulator started on `repro run RECIPE --sim`'s own twin."""
    twin = load_locked(simulated_recipe(recipe, run_dir, None, 1.0))
    assert twin.catalog is not None
    env = {**render_env(twin.recipe), "REPRO_SIM_LOAD_SECONDS": "0"}
    sim = simulator(render_server_argv(twin.recipe, twin.catalog), env)
    with urllib.request.urlopen(sim.url + "/server_info", timeout=10) as response:
        info: dict[str, object] = json.load(response)
    sim.stop()
    return info


def test_the_simulator_and_the_plan_use_what_sglang_resolves(
    project: Project, tmp_path: Path, simulator: Simulators
) -> None:
    resolved = _sglang_resolves(RECIPE)
    assert resolved == 8  # the DFLASH hook, from the (twin) drafter's block_size
    info = _simulator_serves(RECIPE, tmp_path / "run", simulator)
    assert info["speculative_num_draft_tokens"] == resolved
    result = CliRunner().invoke(main, ["campaign", "plan", str(CAMPAIGN), "--json"])
    assert result.exit_code == 0, result.output
    text = result.output
    assert f"draft tokens per step {resolved} (assumed:" in text
    assert "draft tokens per step 16" not in text


def test_a_recipes_own_draft_tokens_are_served_and_not_called_assumed(
    project: Project, tmp_path: Path, simulator: Simulators
) -> None:
    project.recipe("b4", f"extends: {RECIPE}\nspeculative: {{num_draft_tokens: 4}}\n")
    info = _simulator_serves("b4", tmp_path / "run", simulator)
    assert info["speculative_num_draft_tokens"] == 4
    twin = (tmp_path / "run").rglob("b4-sim.yaml")
    assert "assumed" not in next(twin).read_text()
