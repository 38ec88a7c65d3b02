"""Images as a lock pins them: build, push, pull, verify and export by recipe.

The lock's `image` section is the contract between machines: the local tag and content
fingerprint recorded at build time, the registry digest recorded at push time. A second
cluster pulls by that digest and verifies the fingerprint before it trusts the image.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repro.errors import ReproError
from repro.image.build import BuiltImage, build_image
from repro.image.plan import plan_for_spec, resolve_image_spec
from repro.image.registry import PushedImage, pull, push, verify
from repro.progress import Progress, quiet
from repro.recipe.images import list_image_specs


def build_for(ref: str, on_log: Progress = quiet, progress: Progress = quiet) -> BuiltImage:
    """Build the image of REF and, when REF is a locked recipe, record it in the lock.

    A locked recipe builds from the lock's image spec, whose remote diffs carry the sha256
    the first lock recorded: a diff that changed since is refused.
    """
    lock_path = _lock_path(ref, required=False)
    spec = resolve_image_spec(str(lock_path) if lock_path is not None else ref)
    built = build_image(plan_for_spec(spec, progress), on_log)
    if lock_path is not None:
        from repro.lock import update_lock_image

        update_lock_image(lock_path, built.lock_section(), built.catalog())
    return built


def push_for(ref: str, registry: str) -> PushedImage:
    """Push the image the lock of REF records; write the registry digest into the lock."""
    lock_path = _lock_path(ref, required=True)
    assert lock_path is not None
    section = _image_section(lock_path, ref)
    pushed = push(section["reference"], registry)
    from repro.lock import update_lock_image

    update_lock_image(lock_path, {**section, "digest": pushed.digest, "pinned": pushed.pinned})
    return pushed


def pull_for(ref: str) -> str:
    """Pull the image of REF's lock by digest and verify its content; return the reference."""
    section = _image_section(_required_lock(ref), ref)
    pinned = section.get("pinned")
    if not pinned:
        raise ReproError(
            f"the lock of {ref} records no registry digest",
            hint=f"push it from the machine that built it: `repro image push {ref} "
            "--registry HOST/NS`",
        )
    pull(pinned)
    verify(pinned, section["fingerprint"])
    return str(pinned)


def verify_for(ref: str) -> str:
    """Check the local image against REF's lock (by pinned digest when pushed, else tag)."""
    section = _image_section(_required_lock(ref), ref)
    image = section.get("pinned") or section["reference"]
    return verify(image, section["fingerprint"])


def locked_reference(ref: str) -> str:
    """The image reference to run for REF: pinned digest when pushed, else the local tag."""
    section = _image_section(_required_lock(ref), ref)
    return str(section.get("pinned") or section["reference"])


def _required_lock(ref: str) -> Path:
    path = _lock_path(ref, required=True)
    assert path is not None
    return path


def _lock_path(ref: str, required: bool) -> Path | None:
    if ref in list_image_specs():
        if required:
            raise ReproError(
                f"{ref} is an image spec; push, pull and verify work on a locked recipe",
                hint="name the recipe (or its lock file) that uses this image",
            )
        return None
    from repro.lock import lock_for
    from repro.lock.io import LockError

    try:
        return lock_for(ref)[1]
    except LockError:
        if required:
            raise
        return None


def _image_section(lock_path: Path, ref: str) -> dict[str, Any]:
    from repro.lock.io import read_lock_data

    section = read_lock_data(lock_path).get("image")
    if not isinstance(section, dict) or not section.get("fingerprint"):
        raise ReproError(
            f"{lock_path} records no built image",
            hint=f"build it first: `repro image build {ref}`",
        )
    return section


def image_architectures(ref: str) -> tuple[list[str], str]:
    """GPU architectures REF's image carries, and where that was read.

    The built image's manifest (compiled kernels, else declared) when the lock has one, else
    the image spec's declaration.
    """
    lock_path = _lock_path(ref, required=False)
    if lock_path is not None:
        from repro.lock.io import read_lock_data

        manifest = (read_lock_data(lock_path).get("image") or {}).get("manifest") or {}
        compiled = [_arch_of(flag) for flag in manifest.get("compiled_archs") or []]
        if compiled:
            return sorted(set(compiled)), f"compiled kernels of the image in {lock_path}"
        if manifest.get("gpu_archs"):
            return list(manifest["gpu_archs"]), f"image manifest in {lock_path}"
    spec = resolve_image_spec(ref)
    return list(spec.gpu_architectures), f"image spec {spec.name}"


def arch_check(ref: str, compute_caps: list[str]) -> list[str]:
    """The GPUs' compute capabilities that REF's image has no kernels for (empty: all fine)."""
    carried, source = image_architectures(ref)
    if not carried and resolve_image_spec(ref).simulated:
        return []
    missing = sorted({cap for cap in compute_caps if cap not in carried})
    if missing:
        raise ReproError(
            f"the image of {ref} carries kernels for {', '.join(carried) or 'no GPU'} "
            f"({source}); this machine's GPUs need {', '.join(missing)}",
            hint="add the architecture to the image spec's gpu_architectures and rebuild, or "
            "use a recipe made for these GPUs",
        )
    return missing


def _arch_of(flag: str) -> str:
    """`sm_120` / `compute_90a` -> `12.0` / `9.0`."""
    digits = "".join(ch for ch in flag.split("_")[-1] if ch.isdigit())
    return f"{digits[:-1]}.{digits[-1]}" if len(digits) >= 2 else flag
