"""The lock stage: pin everything a recipe names into `locks/<recipe>.lock.json`.

Public API:

    lock_recipe(ref, check=False, output=None) -> LockResult   # write, or report drift
    build_lock(recipe, previous=None) -> (Lock, patch_changes)
    read_lock(path) -> Lock; write_lock(path, lock) -> bool
    update_lock_image(lock_path, image_section, catalog=None)  # for the image stage
    fetch_recipe(ref, cache_dir=None, margin=None, ...) -> FetchReport
    lock_for(ref) -> (Lock, path)                              # the lock fetch would use
"""

from repro.lock.drift import diff_locks
from repro.lock.fetch import fetch_recipe, lock_for
from repro.lock.io import (
    LockError,
    default_locks_dir,
    lock_path_for,
    read_lock,
    update_lock_image,
    write_lock,
)
from repro.lock.model import LOCK_VERSION, Lock, PatchPin
from repro.lock.resolve import LockResult, build_lock, lock_recipe

__all__ = [
    "LOCK_VERSION",
    "Lock",
    "LockError",
    "LockResult",
    "PatchPin",
    "build_lock",
    "default_locks_dir",
    "diff_locks",
    "fetch_recipe",
    "lock_for",
    "lock_path_for",
    "lock_recipe",
    "read_lock",
    "update_lock_image",
    "write_lock",
]
