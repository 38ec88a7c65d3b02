"""`repro fetch`: download exactly what a recipe's lock pins (model and drafter)."""

from __future__ import annotations

from pathlib import Path

from repro.hub import FetchReport, SpaceMargin, fetch_pins
from repro.lock.io import LockError, is_lock_path, lock_path_for, read_lock
from repro.lock.model import Lock
from repro.progress import Progress, quiet


def lock_for(ref: str | Path) -> tuple[Lock, Path]:
    """The lock of `ref`: the file itself for a lock path, else `locks/<recipe>.lock.json`.

    A lock whose model/drafter repo or revision no longer match the recipe is refused.
    """
    if is_lock_path(ref) and Path(ref).is_file():
        return read_lock(Path(ref)), Path(ref)
    from repro.recipe import load_recipe

    recipe = load_recipe(ref)
    path = lock_path_for(recipe.name, recipe.source_path)
    if not path.is_file():
        raise LockError(
            f"recipe {recipe.name} is not locked yet (no {path})",
            hint=f"run `repro lock {ref}` first: fetch downloads exactly what the lock pins",
        )
    lock = read_lock(path)
    wanted = [(recipe.model.repo, recipe.model.revision)]
    if recipe.drafter is not None:
        wanted.append((recipe.drafter.repo, recipe.drafter.revision))
    locked = [(p.repo, p.revision) for p in lock.pins()]
    if wanted != locked:
        now = ", ".join(f"{r}@{v}" for r, v in wanted)
        was = ", ".join(f"{r}@{v}" for r, v in locked)
        raise LockError(
            f"{path} is stale: the recipe asks for {now}, the lock pins {was}",
            hint=f"re-lock with `repro lock {ref}`",
        )
    return lock, path


def fetch_recipe(
    ref: str | Path,
    *,
    cache_dir: str | Path | None = None,
    margin: SpaceMargin | None = None,
    verify_all: bool = False,
    dry_run: bool = False,
    endpoint: str | None = None,
    on_event: Progress = quiet,
) -> FetchReport:
    """Download (or, offline, check) the model and drafter of `ref`'s lock into the Hub cache."""
    lock, path = lock_for(ref)
    on_event(f"using {path}")
    return fetch_pins(
        lock.pins(),
        cache_dir=cache_dir,
        margin=margin,
        verify_all=verify_all,
        dry_run=dry_run,
        endpoint=endpoint,
        on_event=on_event,
    )
