"""From an image spec (images/<name>.yaml, or the one a lock carries) to a concrete build plan
on this machine: the base resolved, every patch read, nothing left to download."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from repro.errors import ReproError
from repro.image.build import BuildPlan, PatchFile
from repro.image.cpu_base import CPU_BASE_REPOSITORY, ensure_cpu_base_image
from repro.image.sim_base import SIM_BASE_REPOSITORY, ensure_sim_base_image
from repro.lock import patchcache
from repro.progress import Progress, quiet
from repro.schema.image import ImageSpec, RemoteDiff

# The base images repro makes on this machine (`base.local: true`), by repository: each
# returns its content tag, building it first unless `build=False` (then None when absent).
LOCAL_BASES: dict[str, Callable[..., str | None]] = {
    SIM_BASE_REPOSITORY: ensure_sim_base_image,
    CPU_BASE_REPOSITORY: ensure_cpu_base_image,
}


def planned_tag(spec: ImageSpec, patches_dir: Path | None = None) -> str:
    """The tag a build of `spec` gives, without building anything (for --dry-run); a
    placeholder while a local base image it needs does not exist yet."""
    remote = spec.patch_set.remote if spec.patch_set else []
    bases_missing = spec.base.local and _local_base(spec)(build=False) is None
    if bases_missing or any(patchcache.read_cached(d, d.sha256) is None for d in remote):
        return f"repro/{spec.name}:{spec.sglang_version}-<hash, known once built>"
    return plan_for_spec(spec, patches_dir=patches_dir).tag


def plan_for_spec(
    spec: ImageSpec, progress: Progress = quiet, patches_dir: Path | None = None
) -> BuildPlan:
    """Resolve the base reference and read every patch, so the build needs no network;
    local patches from `patches_dir` (default: beside the spec's file)."""
    if spec.base.local:
        base_ref = _local_base(spec)(progress)
        assert base_ref is not None
    else:
        base_ref = spec.base.reference
    patches: list[PatchFile] = []
    if spec.patch_set is not None:
        for index, diff in enumerate(spec.patch_set.remote):
            content = fetch_remote_diff(spec, diff, progress)
            patches.append(PatchFile(name=f"{index:02d}-{diff.name}.diff", content=content))
        patches_dir = patches_dir or _patches_dir(spec)
        offset = len(patches)
        for index, path in enumerate(spec.local_patch_paths(patches_dir), start=offset):
            patches.append(PatchFile(name=f"{index:02d}-{path.name}", content=path.read_bytes()))
    return BuildPlan(
        name=spec.name,
        sglang_version=spec.sglang_version,
        base_ref=base_ref,
        sglang_commit=spec.sglang_commit,
        pip_packages=list(spec.pip),
        gpu_archs=list(spec.gpu_architectures),
        patches=patches,
    )


def _local_base(spec: ImageSpec) -> Callable[..., str | None]:
    make = LOCAL_BASES.get(spec.base.image)
    if make is None:
        raise ReproError(
            f"image spec {spec.name}: base.local is only known for {', '.join(LOCAL_BASES)}",
            hint="pin a registry base with image, tag and digest",
        )
    return make


def fetch_remote_diff(spec: ImageSpec, diff: RemoteDiff, progress: Progress) -> bytes:
    """A remote diff's bytes from the patch cache (fetched into it on the host the first
    time) so the build needs no network; refused unless they are the pinned ones (recorded
    by the first `repro lock`)."""
    if patchcache.read_cached(diff, diff.sha256) is None:
        progress(f"fetching {diff.url}")
    return patchcache.fetch(spec.name, diff, diff.sha256)


def _patches_dir(spec: ImageSpec) -> Path:
    source = spec.source_path
    return source.parent.parent / "patches" if source else Path.cwd() / "patches"
