"""The lock stage: pin everything a recipe names into `locks/<recipe>.lock.json`.

Public API (the declarations, `Lock`, `LockedImage` and `Locked`, are in `repro.schema.lock`):

    load_locked(ref, lock="none"|"attach"|"require") -> Locked  # with image spec and catalog
    with_lock(locked, required=True) -> Locked   # add locks/<recipe>.lock.json (checked current)
    lock_recipe(locked, check=False, output=None) -> LockResult   # write, or report drift
    catalog_drift(stand_in, image_catalog, used_options) -> list[str]  # per option the recipe uses
    build_lock(locked, previous=None) -> (Lock, patch_changes)
    read_lock(path) -> Lock; write_lock(path, lock) -> bool
    update_lock_image(lock_path, image, catalog=None) -> Lock  # for the image stage
    update_lock_resolved(lock_path, resolved) -> Lock  # the engine dry-start's result
    relocked(locked, lock) -> Locked             # with the lock a stage just wrote
    fetch_recipe(locked, cache_dir=None, margin=None, ...) -> FetchReport
"""

from repro.lock.drift import catalog_drift, diff_components, diff_locks, recipe_options
from repro.lock.fetch import fetch_recipe
from repro.lock.io import (
    LockError,
    default_locks_dir,
    lock_path_for,
    read_lock,
    update_lock_image,
    update_lock_resolved,
    write_lock,
)
from repro.lock.locked import load_locked, relocked, require_checked, with_lock
from repro.lock.resolve import LockResult, build_lock, lock_recipe

__all__ = [
    "LockError",
    "LockResult",
    "build_lock",
    "catalog_drift",
    "default_locks_dir",
    "diff_components",
    "diff_locks",
    "fetch_recipe",
    "load_locked",
    "lock_path_for",
    "lock_recipe",
    "read_lock",
    "recipe_options",
    "relocked",
    "require_checked",
    "update_lock_image",
    "update_lock_resolved",
    "with_lock",
    "write_lock",
]
