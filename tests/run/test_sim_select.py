"""`repro run R --sim`: which profile stands in for a recipe, and the simulated twin recipe."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from repro.errors import ReproError
from repro.lock import load_locked
from repro.recipe import load_recipe
from repro.run.simulate import simulated_recipe
from repro.sim.profile import ProfileError, list_profiles
from repro.sim.select import choose_profile

SHIPPED = {
    "kimi26-tp8": "kimi26-tp8-rtx6000",
    "kimi26-tp8-nograph": "kimi26-tp8-rtx6000",
    "kimi26-pp8": "kimi26-pp8-rtx6000",
    "kimi26-ep8": "kimi26-ep8-rtx6000",
    "kimi26-ep4": "kimi26-ep4-rtx6000",
    "kimi26-ep4-dflash": "kimi26-ep4-rtx6000",
    "kimi26-ep4-dflash-long": "kimi26-ep4-rtx6000",
    "kimi26-ep4-dflash-instant": "kimi26-ep4-rtx6000",
    "kimi26-tp8-nightly": "kimi26-tp8-rtx6000",
    "kimi26-ep4-nightly": "kimi26-ep4-rtx6000",
    "kimi26-tp8-dflash-b200": "kimi26-tp8-b200",
    "qwen36-27b-tp1-dflash": "qwen36-27b-tp1-rtx6000",
    "qwen36-27b-tp1-dflash-ddtree": "qwen36-27b-tp1-rtx6000",
    "qwen36-27b-tp1-dflash-ddtree-tree64": "qwen36-27b-tp1-rtx6000",
    "qwen36-27b-tp4-dflash-ddtree": "qwen36-27b-tp4-rtx6000",
    "qwen36-27b-tp8-dflash-ddtree": "qwen36-27b-tp8-rtx6000",
    "kimi26-tp8-b300": "kimi26-nvfp4-tp8-b300",
    "kimi26-tp8-eagle3-b300": "kimi26-nvfp4-tp8-b300",
    "kimi26-tp8-dflash-b300": "kimi26-nvfp4-tp8-b300",
    "kimi26-dpa8-b300": "kimi26-nvfp4-tp8-b300",
}


def _choose(name: str) -> str:
    recipe = load_recipe(name)
    p = recipe.parallelism
    return choose_profile(
        name, recipe.model.repo, (p.tp, p.pp, p.ep), list(recipe.topology.gpu_models)
    )


def test_every_shipped_gpu_recipe_has_a_profile_of_its_layout_and_machine(
    repo_root: Path,
) -> None:
    shipped = {p.stem for p in (repo_root / "recipes").glob("*.yaml")} - {"demo"}
    # recipes without a GPU (qwen3-tiny-cpu: SGLang's own CPU engine) need no simulator
    gpu_recipes = {name for name in shipped if load_recipe(name).topology.gpus > 0}
    assert gpu_recipes == set(SHIPPED)  # a new GPU recipe needs its profile
    by_name = {p.name: p for p in list_profiles()}
    for recipe, profile in SHIPPED.items():
        assert _choose(recipe) == profile, recipe
        assert by_name[profile].provenance.startswith(("calibrated: ", "extrapolated: "))


def test_a_machine_without_a_profile_is_refused_not_borrowed() -> None:
    with pytest.raises(ProfileError, match=r"none of that layout is on H100.*kimi26-tp8-b200"):
        choose_profile("kimi26-tp8-h100", "moonshotai/Kimi-K2.6", (8, 1, 1), ["H100"])
    with pytest.raises(ProfileError, match=r"none of moonshotai/Kimi-K2.6 is tp4 pp2"):
        choose_profile("kimi26-tp4pp2", "moonshotai/Kimi-K2.6", (4, 2, 1), ["RTX PRO 6000"])


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
    assert real.speculative is not None
    # the draft tokens SGLang resolves from the drafter's block size, stated (repro.lock.
    # draft_tokens): the simulator has no config.json of the real drafter to read them from
    carried = real.speculative.model_copy(update={"num_draft_tokens": 8})
    assert (twin.parallelism, twin.speculative, twin.server) == (
        real.parallelism,
        carried,
        real.server,
    )
    assert yaml.safe_load(path.read_text())["extends"].endswith("kimi26-ep4-dflash.yaml")


def test_unknown_profile_is_a_clear_error(repo_root: Path, tmp_path: Path) -> None:
    with pytest.raises(ReproError, match="unknown simulator profile 'nope'"):
        simulated_recipe("kimi26-ep4-dflash", tmp_path, "nope", 1.0)
