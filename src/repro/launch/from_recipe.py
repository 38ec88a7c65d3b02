"""A recipe with its lock (plus the image built for it) as a LaunchSpec."""

from __future__ import annotations

import resource
from pathlib import Path

from repro.hub.cache import snapshot_dir
from repro.image.buildplan import plan_for_spec, planned_tag
from repro.launch.spec import LaunchSpec, project_name, state_dir
from repro.recipe import render_env, render_server_argv
from repro.recipe.images import patches_dir_for
from repro.schema.lock import Lock, Locked

# A simulated server loads in seconds; a 600 GB model takes tens of minutes.
SIMULATED_HEALTH_TIMEOUT_S = 120
GPU_HEALTH_TIMEOUT_S = 3600


def required_snapshots(lock: Lock | None, cache: Path) -> dict[str, Path]:
    """The model and drafter snapshots the lock pins: the server loads them from the cache."""
    needed: dict[str, Path] = {}
    for pin in lock.pins() if lock is not None else []:
        if pin.sha and not pin.simulated:
            needed[f"{pin.repo}@{pin.sha[:12]}"] = snapshot_dir(cache, pin)
    return needed


def simulator_memlock_bytes() -> int | None:
    """The simulator (and SGLang on the CPU) pins no GPU memory; sandboxes and rootless engines
    cap memlock below the base file's unlimited, so deployments without a GPU ask only for this
    machine's own limit."""
    hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]
    return None if hard == resource.RLIM_INFINITY else hard


def image_to_run(locked: Locked, build_tag: bool = True) -> str:
    """The image a recipe runs: the lock's pinned digest (or built tag) when it records one,
    else the content tag its image spec builds (`build_tag=False`: without building bases)."""
    if locked.image is not None:
        return locked.image.run_reference
    spec = locked.need_image_spec()
    patches = patches_dir_for(locked.recipe, spec)
    return plan_for_spec(spec, patches_dir=patches).tag if build_tag else planned_tag(spec, patches)


def launch_spec_for(locked: Locked, image: str, host_port: int | None = None) -> LaunchSpec:
    """Render the served recipe's argv and environment (`Locked.served`: the locked commits,
    the Hub offline) for `image` (a tag, ID or digest reference). The server mounts the Hub
    cache `repro fetch` downloads into (`cache_root()`)."""
    from repro.hub.cache import cache_root  # deferred: repro.hub loads huggingface_hub

    cache = cache_root()
    recipe = locked.served
    argv = render_server_argv(recipe, locked.need_catalog())
    gpus_needed = recipe.topology.gpus
    simulated = recipe.simulator is not None
    no_gpu = recipe.topology.gpu_runtime == "none"
    gpu_ids = None if no_gpu else [str(index) for index in range(gpus_needed)]
    return LaunchSpec(
        name=recipe.name,
        compose_project=project_name(recipe.name, state_dir()),
        image=image,
        argv=argv,
        env=render_env(recipe),
        port=recipe.server.port,
        host_port=host_port or recipe.server.port,
        gpu_ids=gpu_ids,
        hf_cache=cache,
        required_snapshots=required_snapshots(locked.lock, cache),
        memlock_bytes=simulator_memlock_bytes() if gpu_ids is None else None,
        start_period_s=60 if simulated else 1800,
        health_timeout_s=SIMULATED_HEALTH_TIMEOUT_S if simulated else GPU_HEALTH_TIMEOUT_S,
    )
