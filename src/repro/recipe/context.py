"""The image spec and option catalog that go with a recipe.

For a recipe file, the image spec is `images/<recipe.image>.yaml` (images dir: `$REPRO_IMAGES_DIR`,
else `images/` next to the recipe's directory, else `./images`) and the catalog is the
spec's effective catalog (shipped catalog of its SGLang version + what its patch set declares).

With its lock, a recipe uses the lock's own `image_spec` (the spec as resolved) and
`catalog` (extracted from the built image) when the lock carries them.
"""

from __future__ import annotations

from pathlib import Path

from repro.errors import RecipeError
from repro.recipe.images import (
    ImageSpecNotFound,
    default_images_dir,
    effective_catalog,
    load_image_spec,
)
from repro.recipe.loader import locate
from repro.spec.catalog import Catalog
from repro.spec.image import ImageSpec
from repro.spec.lock import Lock
from repro.spec.recipe import Recipe


def images_dir_for(recipe: Recipe) -> Path:

    near = recipe.source_path.parent if recipe.source_path else recipe.recipes_dir
    return default_images_dir(near)


def image_for_recipe(recipe: Recipe, lock: Lock | None = None, *, wrap: bool = True) -> ImageSpec:
    """The image spec the recipe names (or the one its `lock` carries).

    A missing spec raises a `RecipeError` naming the recipe's `image` field (with
    `wrap=False`, the `ImageSpecNotFound` itself).
    """
    if lock is not None and lock.image_spec is not None:
        return lock.image_spec
    try:
        return load_image_spec(recipe.image, images_dir_for(recipe))
    except ImageSpecNotFound as err:
        if not wrap:
            raise
        shown, path = locate(recipe, ("image",))
        raise RecipeError(f"{shown}: {path}: {err.message}", hint=err.hint) from None


def catalog_for_recipe(
    recipe: Recipe, image: ImageSpec | None = None, lock: Lock | None = None
) -> Catalog:
    """The option catalog to render and check the recipe with (its `lock`'s, when it has one)."""
    if lock is not None and lock.catalog is not None:
        return lock.catalog
    return effective_catalog(image or image_for_recipe(recipe, lock))
