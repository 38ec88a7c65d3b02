"""`repro lock`: resolve a recipe into its lock file, or check the lock for drift."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import repro  # its __version__ is looked up when used (importlib.metadata)
from repro.errors import RecipeError, ReproError
from repro.lock.drift import diff_locks
from repro.lock.io import LockError, lock_path_for, read_lock, write_lock
from repro.lock.patchcache import resolve_patches
from repro.recipe import check_recipe
from repro.recipe.images import effective_catalog, patches_dir_for
from repro.recipe.placeholder import refuse_placeholder
from repro.schema.image import ImageSpec
from repro.schema.lock import Lock, Locked, RepoPin
from repro.schema.option_catalog import Catalog


@dataclass
class LockResult:
    path: Path
    lock: Lock
    written: bool = False  # the file was created or changed
    created: bool = False
    checked: bool = False  # --check: nothing was written
    drift: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "written": self.written,
            "created": self.created,
            "checked": self.checked,
            "drift": self.drift,
            "model": self.lock.model.model_dump(exclude={"files"}),
            "drafter": self.lock.drafter.model_dump(exclude={"files"})
            if self.lock.drafter
            else None,
        }


def _pin(repo: str, revision: str, simulated: bool, endpoint: str | None) -> RepoPin:
    if simulated:
        return RepoPin.placeholder(repo, revision)
    # Deferred: huggingface_hub is slow to import; only resolving a real repo needs it.
    from repro.hub import resolve_repo

    return resolve_repo(repo, revision, endpoint=endpoint)


def _config(pin: RepoPin | None, endpoint: str | None) -> dict[str, Any] | None:
    """A pinned repository's config.json (none for a simulated pin, and none for a gated
    repository without a token that may read it: locking a gated repo needs no token)."""
    if pin is None or pin.simulated:
        return None
    # Deferred like `_pin`: huggingface_hub is slow to import.
    from repro.hub import GatedRepoAccess, read_config

    try:
        return read_config(pin, endpoint=endpoint)
    except GatedRepoAccess:
        return None


def _config_facts(model: RepoPin, drafter: RepoPin | None, endpoint: str | None) -> dict[str, Any]:
    """The lock's keys read from config.json at the pinned commits: the drafter's block size
    and what the drafter and the parallel sizes must fit (none when simulated or gated)."""
    model_config, drafter_config = _config(model, endpoint), _config(drafter, endpoint)
    if model_config is None and drafter_config is None:
        return {}
    # Deferred like `_pin`: huggingface_hub is slow to import.
    from repro.hub import architectures_in, block_size_of, drafter_facts, model_facts

    facts: dict[str, Any] = {}
    if model_config is not None:
        facts["model_facts"] = model_facts(model_config)
    if drafter is not None and drafter_config is not None:
        facts["drafter_block_size"] = block_size_of(drafter, drafter_config)
        facts["drafter_facts"] = drafter_facts(drafter_config)
        facts["drafter_architectures"] = architectures_in(drafter_config) or None
    return facts


# Rules judged against the config.json files the lock reads: a lock they fail is not written.
LOCKED_CONFIG_RULES = (
    "drafter-block-size",
    "drafter-fits-model",
    "tp-divides-heads",
    "drafter-architecture",
)


def build_lock(
    locked: Locked, previous: Lock | None = None, *, endpoint: str | None = None
) -> tuple[Lock, list[str]]:
    """The lock the recipe resolves to now, and remote patches whose content changed.

    A recipe read from a lock keeps that lock's image spec. The image section, the catalog and
    keys other stages added are carried over from `previous` while the image spec and patches
    are unchanged (otherwise the image they describe is stale: `image` becomes null and
    `catalog` the spec's effective catalog again).
    """
    recipe = locked.recipe
    spec = locked.need_image_spec()
    refuse_placeholder(spec, f"lock {recipe.name}")  # before the Hub or a patch is fetched
    spec_data = spec.model_dump(mode="json")
    before = previous.patches if previous else []
    patches = resolve_patches(spec, spec_data, patches_dir_for(recipe, spec), before)
    # The image (and the catalog extracted from it) still describe this spec and patch set?
    same = (
        previous is not None
        and previous.image_spec is not None
        and previous.image_spec.model_dump(mode="json") == spec_data
        and previous.patches == patches.pins
    )
    carried: dict[str, Any] = {"image": None, "catalog": effective_catalog(spec)}
    if previous is not None and same:
        carried = {"image": previous.image, "catalog": previous.catalog or carried["catalog"]}
        carried.update(previous.model_extra or {})
        if previous.recipe == recipe.resolved():  # what SGLang made of this very recipe
            carried["resolved"] = previous.resolved
    catalog: Catalog = carried["catalog"]
    errors = [
        f for f in check_recipe(Locked(recipe, None, None, spec, catalog)) if f.severity == "error"
    ]
    if errors:
        raise RecipeError.from_problems(
            [str(f) for f in errors], hint="fix the recipe before locking it (`repro recipe check`)"
        )
    simulated = recipe.simulator is not None or bool(getattr(spec, "simulated", False))
    model = _pin(recipe.model.repo, recipe.model.revision, simulated, endpoint)
    drafter = (
        _pin(recipe.drafter.repo, recipe.drafter.revision, simulated, endpoint)
        if recipe.drafter is not None
        else None
    )
    lock = Lock(
        repro_version=repro.__version__,
        recipe=recipe.resolved(),
        image_spec=ImageSpec.model_validate(spec_data),
        model=model,
        drafter=drafter,
        **_config_facts(model, drafter, endpoint),
        patches=patches.pins,
        **carried,
    )
    mismatch = [
        f
        for f in check_recipe(Locked(recipe, lock, None, spec, catalog))
        if f.rule in LOCKED_CONFIG_RULES and f.severity == "error"
    ]
    if mismatch:
        raise RecipeError.from_problems(
            [str(f) for f in mismatch],
            hint="pin the drafter the recipe was written for (its config.json must fit the "
            "model and the image's SGLang), or set speculative.num_draft_tokens to the "
            "drafter's block size",
        )
    return lock, patches.changed


def lock_recipe(
    locked: Locked,
    *,
    check: bool = False,
    output: Path | None = None,
    endpoint: str | None = None,
) -> LockResult:
    """Resolve the recipe into its lock file: `output`, else the lock it was read from, else
    `locks/<recipe>.lock.json`.

    With `check`, nothing is written: the result's `drift` lists what changed since the lock
    (a branch moved, a file added/removed/resized, the recipe or image spec edited).
    """
    recipe = locked.recipe
    path = output or locked.lock_path or lock_path_for(recipe.name, recipe.source_path)
    if path == locked.lock_path:
        previous = locked.lock
    else:
        previous = read_lock(path) if path.is_file() else None
    if check and previous is None:
        raise LockError(
            f"no lock to check at {path}", hint=f"create it with `repro lock {recipe.name}`"
        )
    lock, patch_changes = build_lock(locked, previous, endpoint=endpoint)
    if check:
        assert previous is not None
        return LockResult(
            path, lock, checked=True, drift=patch_changes + diff_locks(previous, lock)
        )
    if patch_changes:
        raise ReproError(
            "refusing to lock: " + "; ".join(patch_changes),
            hint="the diff at that URL is not the one that was pinned; pin the URL to a fixed "
            "commit, or remove its sha256 from the image spec and the lock to accept the new one",
        )
    written = write_lock(path, lock)
    return LockResult(path, lock, written=written, created=previous is None)
