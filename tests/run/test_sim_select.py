"""`repro run R --sim`: which profile stands in for a recipe, and the simulated twin recipe."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from repro.errors import ReproError
from repro.lock import load_locked
from repro.run.simulate import simulated_recipe
from repro.sim.profile import ProfileError
from repro.sim.select import choose_profile


@pytest.mark.parametrize(
    ("recipe", "gpus", "profile"),
    [
        ("kimi26-ep4-dflash", ["RTX PRO 6000"], "kimi26-ep4-rtx6000"),
        ("kimi26-tp8-dflash-b200", ["B200"], "kimi26-tp8-b200"),
        ("kimi26-tp8", ["RTX PRO 6000"], "kimi26-tp8-rtx6000"),
        ("qwen36-27b-tp1-dflash-ddtree", ["RTX PRO 6000"], "qwen36-27b-ddtree-rtx6000"),
    ],
)
def test_profile_follows_model_layout_and_gpu(recipe: str, gpus: list[str], profile: str) -> None:
    assert choose_profile(recipe, gpus) == profile


def test_no_matching_profile_names_the_known_ones() -> None:
    with pytest.raises(ProfileError, match=r"kimi26-pp8.*known: .*kimi26-ep4-rtx6000"):
        choose_profile("kimi26-pp8", ["RTX PRO 6000"])


def test_twin_recipe_keeps_the_argv_and_runs_on_the_simulator(
    repo_root: Path, tmp_path: Path
) -> None:
    path = simulated_recipe(
        str(repo_root / "recipes" / "kimi26-ep4-dflash.yaml"), tmp_path, None, 0.01
    )
    twin = load_locked(str(path)).recipe
    real = load_locked(str(repo_root / "recipes" / "kimi26-ep4-dflash.yaml")).recipe
    assert twin.image == "sim" and twin.topology.gpus == 0
    assert twin.simulator is not None and twin.simulator.profile == "kimi26-ep4-rtx6000"
    assert twin.env["REPRO_SIM_TIME_SCALE"] == "0.01"
    assert (twin.parallelism, twin.speculative, twin.server) == (
        real.parallelism,
        real.speculative,
        real.server,
    )
    assert yaml.safe_load(path.read_text())["extends"].endswith("kimi26-ep4-dflash.yaml")


def test_unknown_profile_is_a_clear_error(repo_root: Path, tmp_path: Path) -> None:
    with pytest.raises(ReproError, match="unknown simulator profile 'nope'"):
        simulated_recipe("kimi26-ep4-dflash", tmp_path, "nope", 1.0)
