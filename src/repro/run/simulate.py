"""`repro run RECIPE --sim [PROFILE]`: the recipe's own server argv on the simulator image.

The run folder gets `recipes/<name>-sim.yaml`, a recipe that extends the real one (copied
beside it with its parents) and changes only what the simulator needs (image `sim`, no GPUs,
a simulator section with the profile and its time scale); its lock goes to the run folder's
`locks/`, never beside the real recipe's.

A recipe whose image has a patch set that provides algorithms or options (the DDTree image:
SGLang 0.5.15 plus sgl-project/sglang#29907) runs on a simulator image standing in for it,
`images/sim-<image>.yaml` in the run folder: the simulator base with a local patch to its
SGLang source tree (`patches/sim-<set>/`) that makes it report the image's SGLang version, so
that it parses that release's option catalog, and register the patch set's algorithms; the
spec declares the same `provides`, so the twin is checked as the recipe is.
`--resume` reads that file back (it is the run's `ref`), so a resumed run stays simulated.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import yaml

from repro.errors import RecipeError, ReproError
from repro.fsutil import write_atomic
from repro.image.sim_base import stand_in_patch
from repro.lock.draft_tokens import DraftTokens, current_draft_tokens
from repro.recipe import load_recipe
from repro.recipe.argv_check import load_catalog
from repro.recipe.images import catalog_version, image_for_recipe, images_dir_for, load_image_spec
from repro.recipe.yamlio import read_mapping
from repro.runfolder import RunFolder
from repro.schema.recipe import Recipe
from repro.settings import SIM_TIME_SCALE
from repro.sim.profile import ProfileError, profile_path
from repro.sim.select import choose_profile

SIM_IMAGE = "sim"
TWIN_SUFFIX = "-sim"  # the twin's file and recipe name: <name>-sim
STAND_IN_PATCH = "0001-stand-in.patch"


def _parents_beside(recipe: Recipe, folder: Path) -> str:
    """What the twin extends: the recipe's files copied into the twin's folder when each
    names its parent by file name (the common case), so that the run holds the files it runs
    and reads none outside its folder (`repro.recipe.loader` refuses such reads); else the
    recipe file's absolute path."""
    assert recipe.source_path is not None
    chain = recipe.chain
    by_name = all(
        Path(str(read_mapping(p).data.get("extends") or ".")).parent == Path(".") for p in chain
    )
    if not by_name or len({p.name for p in chain}) != len(chain):
        return str(recipe.source_path.resolve())
    folder.mkdir(parents=True, exist_ok=True)
    for path in chain:
        shutil.copyfile(path, folder / path.name)
    return chain[0].name


def simulated_recipe(ref: str, run_dir: Path, profile: str | None, time_scale: float) -> Path:
    """Write the simulated twin of recipe `ref` into `run_dir` and return its path."""
    recipe = load_recipe(ref)
    if recipe.source_path is None:
        raise ReproError(f"{ref}: --sim needs a recipe file or name")
    if recipe.simulator is not None:
        raise ReproError(
            f"{recipe.name} is already a simulator recipe", hint="run it without --sim"
        )
    try:
        sizes = (recipe.parallelism.tp, recipe.parallelism.pp, recipe.parallelism.ep)
        chosen = profile or choose_profile(
            recipe.name, recipe.model.repo, sizes, list(recipe.topology.gpu_models)
        )
        profile_path(chosen)
    except ProfileError as err:
        raise ReproError(str(err), hint="`repro sim profiles` lists the profiles") from None
    if time_scale < 0:
        raise ReproError(f"--time-scale {time_scale}: must be 0 or more")
    folder = RunFolder(run_dir)
    carried = _carried_draft_tokens(recipe)
    drafts = f" Draft tokens per step: {carried.label()}." if carried is not None else ""
    twin: dict[str, object] = {
        "description": f"{recipe.name} on the CPU simulator (profile {chosen}); SIMULATED.{drafts}",
        "extends": _parents_beside(recipe, run_dir / "recipes"),
        "image": _stand_in_image(recipe, folder) or SIM_IMAGE,
        "topology": {
            "gpus": 0,
            "gpu_runtime": "none",
            "gpu_models": [],
            "interconnect": "any",
            "min_gpu_memory_gb": None,
        },
        "env": {SIM_TIME_SCALE.name: f"{time_scale:g}"},
        "simulator": {"profile": chosen, "load_seconds": 2, "seed": 0},
    }
    if carried is not None:
        twin["speculative"] = {"num_draft_tokens": carried.value}
    path = folder.sim_recipes_dir / f"{recipe.name}{TWIN_SUFFIX}.yaml"
    write_atomic(path, yaml.safe_dump(twin, sort_keys=False))
    images = folder.sim_images_dir  # the image specs the twin's `image: sim` is looked up in
    if not images.exists():
        os.symlink(images_dir_for(recipe).resolve(), images)
    return path


def _carried_draft_tokens(recipe: Recipe) -> DraftTokens | None:
    """The draft tokens SGLang would resolve for `recipe` from its drafter's config.json, where
    the recipe leaves them to it: the simulator has no config.json of the real drafter, so the
    twin states the number (repro.lock.draft_tokens, the one source), and serves what the plan
    predicts and `recipe render --resolved` shows."""
    found = current_draft_tokens(recipe)
    return None if found is None or found.origin == "recipe" else found


def _stand_in_image(recipe: Recipe, folder: RunFolder) -> str | None:
    """Write the simulator image standing in for the recipe's patched image into the run
    folder (see the module docstring) and return its name; None when `sim` serves it (or the
    recipe's image spec cannot be read: the twin's check then says why)."""
    try:
        spec = image_for_recipe(recipe)
    except RecipeError:
        return None
    provides = spec.provides
    if spec.simulated or not (provides.speculative_algorithms or provides.options):
        return None
    assert spec.patch_set is not None  # what provides something is a patch set
    version = catalog_version(spec)
    algorithms = [*load_catalog(version).speculative_algorithms, *provides.speculative_algorithms]
    patch_set = f"sim-{spec.patch_set.name}"
    write_atomic(
        folder.sim_patches_dir / patch_set / STAND_IN_PATCH, stand_in_patch(version, algorithms)
    )
    sim = load_image_spec(SIM_IMAGE, images_dir_for(recipe))
    name = f"sim-{spec.name}"
    stand_in = {
        "description": f"The CPU simulator standing in for image {spec.name}: SGLang "
        f"{version}'s options plus what patch set {spec.patch_set.name} provides; SIMULATED.",
        "base": sim.base.model_dump(mode="json", exclude_defaults=True),
        "sglang_version": version,
        "simulated": True,
        "patch_set": {
            "name": patch_set,
            "local": [STAND_IN_PATCH],
            "provides": provides.model_dump(mode="json", exclude_defaults=True),
        },
    }
    write_atomic(folder.sim_images_dir / f"{name}.yaml", yaml.safe_dump(stand_in, sort_keys=False))
    return name
