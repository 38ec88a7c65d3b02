"""What the user named, resolved once into a `Locked`: the recipe, and its lock when it has one.

The CLI resolves each recipe argument here and hands the `Locked` to the stages, which never
look a ref up again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from repro.errors import RecipeError
from repro.lock.io import LockError, lock_path_for, parse_lock, read_lock
from repro.recipe.images import catalog_for_recipe, image_for_recipe
from repro.recipe.loader import load_recipe_document
from repro.recipe.rules import check_recipe
from repro.schema.lock import Lock, Locked
from repro.schema.recipe import Recipe

LockMode = Literal["none", "attach", "require"]


def load_locked(
    ref: str | Path, recipes_dir: Path | None = None, lock: LockMode = "none"
) -> Locked:
    """`ref` (a recipe name, a recipe file or a lock file) as a recipe with its lock, image spec
    and catalog, resolved once.

    A lock file gives its recipe and its lock; a name or a recipe file gives the recipe alone,
    unless `lock` asks for the one `repro lock` wrote: "attach" adds it when it is there and
    current, "require" refuses a recipe without one (`with_lock`).
    """
    recipe, document = load_recipe_document(ref, recipes_dir)
    if document is None or recipe.source_path is None:
        locked = resolved(recipe)
    else:
        locked = resolved(recipe, parse_lock(document, recipe.source_path), recipe.source_path)
    return locked if lock == "none" else with_lock(locked, required=lock == "require")


def resolved(recipe: Recipe, lock: Lock | None = None, lock_path: Path | None = None) -> Locked:
    """`recipe` and its `lock` with the image spec and catalog they stand for (the lock's own
    when it carries them); what does not load stays None, and `image_error` says why."""
    try:
        spec = image_for_recipe(recipe, lock)
    except RecipeError as err:
        return Locked(recipe, lock, lock_path, image_error=err)
    try:
        catalog = catalog_for_recipe(recipe, spec, lock)
    except RecipeError as err:
        return Locked(recipe, lock, lock_path, spec, image_error=err)
    return Locked(recipe, lock, lock_path, spec, catalog)


def relocked(locked: Locked, lock: Lock) -> Locked:
    """`locked` with the lock a stage just wrote to `locked.lock_path` (`update_lock_image`):
    its image and catalog, resolved again without reading the file back."""
    return resolved(locked.recipe, lock, locked.lock_path)


def require_checked(locked: Locked) -> Locked:
    """`locked`, unless `repro recipe check` rejects it: a rendered command or a dry-run
    plan is only shown for a recipe that can run."""
    errors = [f for f in check_recipe(locked) if f.severity == "error"]
    if errors:
        ref = locked.lock_path or locked.recipe.source_path or locked.name
        raise RecipeError.from_problems(
            [str(finding) for finding in errors],
            hint=f"`repro recipe check {ref}` lists every finding",
        )
    return locked


def with_lock(locked: Locked, required: bool = True) -> Locked:
    """`locked` with its lock: the one it carries, else `locks/<recipe>.lock.json`.

    A missing lock, or one whose model/drafter repo or revision no longer match the recipe,
    is refused; with `required=False`, `locked` then comes back as it was.
    """
    if locked.lock is not None:
        return locked
    try:
        path, lock = _current_lock_of(locked.recipe)
    except LockError:
        if required:
            raise
        return locked
    return resolved(locked.recipe, lock, path)


def _current_lock_of(recipe: Recipe) -> tuple[Path, Lock]:
    path = lock_path_for(recipe.name, recipe.source_path)
    if not path.is_file():
        raise LockError(
            f"recipe {recipe.name} is not locked yet (no {path})",
            hint=f"run `repro lock {recipe.name}` first: it pins what the later stages use",
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
            hint=f"re-lock with `repro lock {recipe.name}`",
        )
    return path, lock
