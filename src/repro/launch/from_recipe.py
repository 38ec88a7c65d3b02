"""A recipe (plus the image built for it) as a LaunchSpec."""

from __future__ import annotations

import resource
from pathlib import Path

from repro.launch.spec import LaunchSpec
from repro.recipe import catalog_for_recipe, render_env, render_server_argv
from repro.spec.recipe import Recipe

# A simulated server loads in seconds; a 600 GB model takes tens of minutes.
SIMULATED_HEALTH_TIMEOUT_S = 120
GPU_HEALTH_TIMEOUT_S = 3600


def required_snapshots(recipe: Recipe, cache: Path) -> dict[str, Path]:
    """The model and drafter snapshots the lock pins: the server loads them from the cache."""
    lock = recipe.lock_data or {}
    needed: dict[str, Path] = {}
    for role in ("model", "drafter"):
        pin = lock.get(role) or {}
        if pin.get("sha") and not pin.get("simulated"):
            folder = "models--" + str(pin["repo"]).replace("/", "--")
            needed[f"{pin['repo']}@{pin['sha'][:12]}"] = cache / folder / "snapshots" / pin["sha"]
    return needed


def simulator_memlock_bytes() -> int | None:
    """The simulator pins no memory; sandboxes and rootless engines cap memlock below the
    base file's unlimited, so simulated deployments ask only for this machine's own limit."""
    hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]
    return None if hard == resource.RLIM_INFINITY else hard


def image_to_run(recipe: Recipe, build_tag: bool = True) -> str:
    """The image a recipe runs: the lock's pinned digest (or built tag) when it records one,
    else the content tag its image spec builds (`build_tag=False`: without building bases)."""
    from repro.image.plan import plan_for_spec, planned_tag
    from repro.recipe import image_for_recipe

    section = (recipe.lock_data or {}).get("image") or {}
    if section.get("pinned") or section.get("reference"):
        return str(section.get("pinned") or section["reference"])
    spec = image_for_recipe(recipe)
    return plan_for_spec(spec).tag if build_tag else planned_tag(spec)


def launch_spec_for(recipe: Recipe, image: str, host_port: int | None = None) -> LaunchSpec:
    """Render the recipe's argv and environment for `image` (a tag, ID or digest reference).
    The server mounts the Hub cache `repro fetch` downloads into (`cache_root()`)."""
    from repro.hub.cache import cache_root  # deferred: repro.hub loads huggingface_hub

    cache = cache_root()
    argv = render_server_argv(recipe, catalog_for_recipe(recipe))
    gpus_needed = recipe.topology.gpus
    simulated = recipe.simulator is not None
    return LaunchSpec(
        name=recipe.name,
        image=image,
        argv=argv,
        env=render_env(recipe),
        port=recipe.server.port,
        host_port=host_port or recipe.server.port,
        gpu_ids=None
        if recipe.topology.gpu_runtime == "none"
        else [str(index) for index in range(gpus_needed)],
        hf_cache=cache,
        required_snapshots=required_snapshots(recipe, cache),
        memlock_bytes=simulator_memlock_bytes() if simulated else None,
        start_period_s=60 if simulated else 1800,
        health_timeout_s=SIMULATED_HEALTH_TIMEOUT_S if simulated else GPU_HEALTH_TIMEOUT_S,
    )
