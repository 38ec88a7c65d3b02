"""A recipe's image as its lock records it: build, push, pull, verify and check it.

The lock's `image` section is the contract between machines: the local tag and content
fingerprint recorded at build time, the registry digest recorded at push time. A second
cluster pulls by that digest and verifies the fingerprint before it trusts the image.
"""

from __future__ import annotations

from repro.errors import ReproError
from repro.image.build import BuiltImage, UnbuiltImage, build_image, read_manifest
from repro.image.buildplan import plan_for_spec
from repro.image.engine import client, image_exists
from repro.image.fingerprint import content_fingerprint
from repro.image.registry import PushedImage, checked_registry, pull, push, verify
from repro.lock import (
    catalog_drift,
    diff_components,
    recipe_options,
    relocked,
    update_lock_image,
)
from repro.progress import Progress, quiet
from repro.recipe.argv_check import available_catalog_versions, load_catalog
from repro.recipe.images import effective_catalog, patches_dir_for
from repro.schema.image import ImageSpec
from repro.schema.lock import Locked, LockedImage
from repro.schema.option_catalog import Catalog


def build_for(
    locked: Locked,
    on_log: Progress = quiet,
    progress: Progress = quiet,
    relock_image: bool = False,
    rebuild: bool = False,
) -> tuple[BuiltImage, Locked]:
    """Build the recipe's image and, when `locked` carries a lock, record it there; return
    the image and `locked` carrying that lock (the image's own catalog), not to be re-read.

    A lock that already records an image is a contract, not a cache: the local image must
    have the recorded content fingerprint (else refused, the lock untouched). Only
    `relock_image` (the user asking on purpose) builds and records a new image. An image about
    to be recorded (a first lock) is what the build produces: a tag found on the machine is
    checked against a build of the same inputs (`verify_tag`), or, with `rebuild`, built
    over. A locked recipe builds from the lock's image spec, whose remote diffs carry the
    sha256 the first lock recorded: a diff that changed since is refused.
    """
    if locked.image is not None and not relock_image:
        if rebuild:
            raise ReproError(
                f"{locked.lock_path} records an image already: --rebuild would replace it",
                hint=f"record the rebuilt one on purpose: `repro image build {locked.name} "
                "--rebuild --relock-image`",
            )
        return _recorded_image(locked, locked.image), locked
    spec = locked.need_image_spec()
    plan = plan_for_spec(spec, progress, patches_dir_for(locked.recipe, spec))
    try:
        built = build_image(plan, on_log, rebuild=rebuild, verify=locked.lock_path is not None)
    except UnbuiltImage as err:
        raise UnbuiltImage(
            f"{err.message}; {locked.lock_path} does not record it",
            hint=f"build it again over the tag: `repro image build {locked.name} --rebuild` "
            f"(or remove it: `docker rmi {plan.tag}`), then run again",
        ) from None
    if locked.lock_path is None:
        return built, locked
    previous = locked.lock.image if locked.lock is not None else None
    lock = update_lock_image(locked.lock_path, built.locked_image(), built.catalog())
    for line in [*_drift_lines(locked, spec, built), *diff_components(previous, lock.image)]:
        progress(line)
    return built, relocked(locked, lock)


def _drift_lines(locked: Locked, spec: ImageSpec, built: BuiltImage) -> list[str]:
    """What the lock's catalog now says differently from the stand-in the recipe was checked
    against before the image existed, for the options the recipe uses; and, for SGLang's own
    parser (not the simulator's), from the whole catalog repro ships for its version."""
    stand_in, own = effective_catalog(spec), built.catalog()
    used = recipe_options(locked.recipe, stand_in, own)
    drift = catalog_drift(stand_in, own, used)
    lines = (
        [
            f"the image's SGLang {own.sglang_version} catalog agrees with the stand-in "
            f"(SGLang {stand_in.sglang_version}) on the {len(used)} options {locked.name} uses"
        ]
        if not drift
        else [
            f"the image's SGLang {own.sglang_version} catalog differs from the stand-in "
            f"(SGLang {stand_in.sglang_version}) on options {locked.name} uses:",
            *(f"  {line}" for line in drift),
        ]
    )
    shipped = None if spec.simulated else shipped_catalog_drift(own)
    if shipped:
        name = f"sglang-{own.sglang_version}.json"
        lines += [f"the image's own catalog differs from the shipped {name}:"]
        lines += [f"  {line}" for line in shipped]
    elif shipped is not None:
        lines.append(
            f"the image's own catalog has no drift from the shipped "
            f"sglang-{own.sglang_version}.json ({len(own.options)} options)"
        )
    return lines


def shipped_catalog_drift(own: Catalog) -> list[str] | None:
    """Every option where an image's own catalog differs from the one repro ships for its
    SGLang version (None when repro ships none): what to fix in repro's catalog."""
    if own.sglang_version not in available_catalog_versions():
        return None
    shipped = load_catalog(own.sglang_version)
    drift = catalog_drift(shipped, own, [*shipped.spellings(), *own.spellings()])
    algorithms = set(own.speculative_algorithms) ^ set(shipped.speculative_algorithms)
    if algorithms:
        drift.append(f"speculative algorithms differ: {', '.join(sorted(algorithms))}")
    return drift


def _recorded_image(locked: Locked, image: LockedImage) -> BuiltImage:
    """The image the lock records, after checking the local one has its content."""
    fingerprint = check_local_image(locked, image)
    reference = image.run_reference
    return BuiltImage(
        tag=reference,
        image_id=str(client().image.inspect(reference).id),
        fingerprint=fingerprint,
        manifest=read_manifest(reference),
    )


def check_local_image(locked: Locked, image: LockedImage) -> str:
    """Refuse a local image whose content is not what the lock records; return its
    fingerprint. For `run`, `launch` and `image build` from a lock: a retagged, rebuilt or
    tampered image never runs under a lock's name."""
    reference = image.run_reference
    relock = f"`repro image build {locked.name} --relock-image`"
    if not image_exists(reference):
        how = (
            f"pull it: `repro image pull {locked.name}`"
            if image.pinned
            else f"build and re-lock it on purpose: {relock} (a rebuild is a new image)"
        )
        raise ReproError(
            f"the image {locked.lock_path} records ({reference}) is not on this machine",
            hint=how,
        )
    actual = content_fingerprint(reference)
    if actual != image.fingerprint:
        raise ReproError(
            f"the local image {reference} is not the one {locked.lock_path} records: content "
            f"fingerprint {actual} != locked {image.fingerprint} (changed, retagged or rebuilt "
            "since it was locked); the lock was not changed",
            hint=f"remove it (`docker rmi {reference}`) and "
            + (
                f"pull the locked one: `repro image pull {locked.name}`"
                if image.pinned
                else f"rebuild and re-lock on purpose: {relock}"
            ),
        )
    return actual


def push_for(
    locked: Locked, registry: str, progress: Progress = quiet
) -> tuple[PushedImage, Locked]:
    """Push the image the recipe's lock records; write the registry digest into the lock and
    return `locked` carrying that lock (as `build_for` does)."""
    checked_registry(registry)
    image = _built_image(locked)
    pushed = push(image.reference, registry, progress)
    assert locked.lock_path is not None
    lock = update_lock_image(locked.lock_path, image.pushed(pushed.digest, pushed.pinned))
    return pushed, relocked(locked, lock)


def pull_for(locked: Locked) -> str:
    """Pull the image of the recipe's lock by digest and verify its content; return the
    reference."""
    image = _built_image(locked)
    if not image.pinned:
        raise ReproError(
            f"the lock of {locked.name} records no registry digest",
            hint=f"push it from the machine that built it: `repro image push {locked.name} "
            "--registry HOST/NS`",
        )
    pull(image.pinned)
    verify(image.pinned, image.fingerprint)
    return image.pinned


def verify_for(locked: Locked) -> str:
    """Check the local image against the recipe's lock (by pinned digest when pushed, else
    tag)."""
    image = _built_image(locked)
    return verify(image.run_reference, image.fingerprint)


def locked_reference(locked: Locked) -> str:
    """The image reference to run: pinned digest when pushed, else the local tag."""
    return _built_image(locked).run_reference


def _built_image(locked: Locked) -> LockedImage:
    if locked.image is None:
        raise ReproError(
            f"{locked.lock_path or f'recipe {locked.name} (not locked)'} records no built image",
            hint=f"build it first: `repro image build {locked.name}`",
        )
    return locked.image


def image_architectures(target: Locked | ImageSpec) -> tuple[list[str], str]:
    """GPU architectures the image of a recipe (or of an image spec) carries, and where that
    was read.

    The built image's manifest (compiled kernels, else declared) when the recipe's lock has
    one, else the image spec's declaration.
    """
    if isinstance(target, ImageSpec):
        return list(target.gpu_architectures), f"image spec {target.name}"
    locked = target
    manifest = (locked.image.manifest if locked.image else None) or {}
    compiled = [_arch_of(flag) for flag in manifest.get("compiled_archs") or []]
    if compiled:
        return sorted(set(compiled)), f"compiled kernels of the image in {locked.lock_path}"
    if manifest.get("gpu_archs"):
        return list(manifest["gpu_archs"]), f"image manifest in {locked.lock_path}"
    return image_architectures(locked.need_image_spec())


def arch_check(target: Locked | ImageSpec, compute_caps: list[str]) -> list[str]:
    """The GPUs' compute capabilities that the image has no kernels for (empty: all fine)."""
    carried, source = image_architectures(target)
    spec = target if isinstance(target, ImageSpec) else target.need_image_spec()
    if not carried and spec.simulated:
        return []
    missing = sorted({cap for cap in compute_caps if cap not in carried})
    if missing:
        name = spec.name if isinstance(target, ImageSpec) else target.name
        raise ReproError(
            f"the image of {name} carries kernels for {', '.join(carried) or 'no GPU'} "
            f"({source}); this machine's GPUs need {', '.join(missing)}",
            hint="add the architecture to the image spec's gpu_architectures and rebuild, or "
            "use a recipe made for these GPUs",
        )
    return missing


def _arch_of(flag: str) -> str:
    """`sm_120` / `compute_90a` -> `12.0` / `9.0`."""
    digits = "".join(ch for ch in flag.split("_")[-1] if ch.isdigit())
    return f"{digits[:-1]}.{digits[-1]}" if len(digits) >= 2 else flag
