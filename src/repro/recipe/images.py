"""Loading image specs (`images/<name>.yaml`) and the option catalog they stand for.

`effective_catalog(spec)` is the SGLang version's shipped catalog (or the stand-in the spec
names, adjusted to the image's era) plus what the spec's patch set declares; once an image is
built, the catalog extracted from it (kept in the lock) is the truth.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

from pydantic import ValidationError

from repro.errors import RecipeError, suggestion
from repro.recipe.argv_check import load_catalog, release_before
from repro.recipe.findings import display_path
from repro.recipe.loader import inside, locate
from repro.recipe.yamlio import problem_lines, read_mapping
from repro.schema.image import ImageSpec, StandInCatalog
from repro.schema.lock import Lock
from repro.schema.option_catalog import Catalog
from repro.schema.recipe import Recipe
from repro.settings import IMAGES_DIR


class ImageSpecError(RecipeError):
    """An image spec is invalid."""


class ImageSpecNotFound(ImageSpecError):
    """No image spec of that name."""


def default_images_dir(near: Path | None = None) -> Path:
    """`$REPRO_IMAGES_DIR`, else `images/` next to `near` (a recipes dir), else `./images`."""
    env = IMAGES_DIR.read()
    if env:
        return Path(env)
    if near is not None and (near.parent / "images").is_dir():
        return near.parent / "images"
    return Path.cwd() / "images"


def list_image_specs(images_dir: Path | None = None) -> list[str]:
    root = images_dir or default_images_dir()
    if not root.is_dir():
        return []
    return sorted(p.stem for p in root.iterdir() if p.suffix in (".yaml", ".yml"))


def load_image_spec(ref: str | Path, images_dir: Path | None = None) -> ImageSpec:
    """Load `images/<ref>.yaml` (or the path `ref`) and check its local patch files exist."""
    root = images_dir or default_images_dir()
    if isinstance(ref, Path) or "/" in ref or ref.endswith((".yaml", ".yml")):
        path = Path(ref)
    else:  # by name: a link in images/ cannot lead out of it (the folder may be a link)
        path = inside(root / f"{ref}.yaml", (root,), "image spec")
    if not path.is_file():
        known = list_image_specs(path.parent)
        raise ImageSpecNotFound(
            f"no image spec '{ref}' at {display_path(path)}{suggestion(str(ref), known)}",
            hint=f"image specs there: {', '.join(known)}" if known else f"set {IMAGES_DIR.name}",
        )
    doc = read_mapping(path, "image spec")
    data = dict(doc.data)
    data.setdefault("name", path.stem)
    try:
        spec = ImageSpec.model_validate(data)
    except ValidationError as exc:
        raise ImageSpecError.from_problems(problem_lines(exc, ImageSpec, [doc])) from None
    spec._source_path = path
    patches_dir = path.parent.parent / "patches"
    missing = [
        f"{display_path(path)}: patch_set.local[{i}]: no file {display_path(p)}"
        for i, p in enumerate(spec.local_patch_paths(patches_dir))
        if not p.is_file()
    ]
    if missing:
        raise ImageSpecError.from_problems(missing)
    return spec


def catalog_version(spec: ImageSpec) -> str:
    """The shipped catalog that checks the spec's recipes before `repro lock`: its own
    version's, or for a stand-in the newest release built on or before the base's SGLang
    commit (a version the spec names must be that one)."""
    stand_in = spec.stand_in_catalog
    if stand_in is None:
        return spec.sglang_version
    day = spec.base.sglang_commit_date
    assert day is not None  # the spec's own validation requires it with a stand-in
    chosen = release_before(date.fromisoformat(day))
    where = f"image spec {spec.name}: stand_in_catalog"
    if chosen is None:
        raise ImageSpecError(
            f"{where}: repro ships no release catalog built on or before {day}",
            hint="extract the release before it with `repro image catalog VERSION`",
        )
    if stand_in.version is not None and stand_in.version != chosen:
        released = load_catalog(chosen).released
        raise ImageSpecError(
            f"{where}.version: {stand_in.version} is not the release before the base's SGLang "
            f"commit ({day}); that is {chosen} (built {released})",
            hint=f"set stand_in_catalog.version to {chosen}, or leave it out",
        )
    return chosen


def _stand_in(spec: ImageSpec, base: Catalog, stand_in: StandInCatalog) -> Catalog:
    """The release catalog adjusted by what the image's era adds or lacks."""
    lacks = set(stand_in.lacks)
    present = [s for o in stand_in.adds for s in (o.name, *o.aliases) if base.has(s)]
    if present:
        raise ImageSpecError(
            f"image spec {spec.name}: stand_in_catalog.adds declares options the SGLang "
            f"{base.sglang_version} catalog already has: {', '.join(present)}"
        )
    absent = [name for name in stand_in.lacks if not base.has(name)]
    if absent:
        raise ImageSpecError(
            f"image spec {spec.name}: stand_in_catalog.lacks names options the SGLang "
            f"{base.sglang_version} catalog does not have: {', '.join(absent)}"
        )
    kept = [o for o in base.options if not lacks.intersection(o.options)]
    return Catalog(
        sglang_version=base.sglang_version,
        options=kept,
        speculative_algorithms=base.speculative_algorithms,
        source=f"{base.source}, standing in for image spec {spec.name}",
        env=base.env,
        released=base.released,
        model_architectures=base.model_architectures,
    ).extended(options=[o.to_catalog_option(spec.name) for o in stand_in.adds])


def effective_catalog(spec: ImageSpec) -> Catalog:
    """The shipped catalog of the spec's version (or of its stand-in, adjusted to the image's
    era) plus what its patch set declares."""
    base = load_catalog(catalog_version(spec))
    if spec.stand_in_catalog is not None:
        base = _stand_in(spec, base, spec.stand_in_catalog)
    return with_patch_set(spec, base)


def with_patch_set(spec: ImageSpec, base: Catalog) -> Catalog:
    """`base` plus what the spec's patch set declares (options, algorithms, env)."""
    provides = spec.provides
    if not (provides.options or provides.speculative_algorithms or provides.env):
        return base
    owner = spec.patch_set.name if spec.patch_set else spec.name
    return base.extended(
        options=[o.to_catalog_option(owner) for o in provides.options],
        algorithms=provides.speculative_algorithms,
        env=provides.env,
    )


def images_dir_for(recipe: Recipe) -> Path:
    """Where the recipe's image specs live (`images/` beside its recipes directory)."""
    near = recipe.source_path.parent if recipe.source_path else recipe.recipes_dir
    return default_images_dir(near)


def patches_dir_for(recipe: Recipe, spec: ImageSpec) -> Path:
    """Where the spec's local patch sets live: `patches/` beside its images folder (for a
    spec a lock carries, which has no file, beside the recipe's: a `--sim` run's folder holds
    its stand-in image's)."""
    images = spec.source_path.parent if spec.source_path else images_dir_for(recipe)
    return images.parent / "patches"


def image_for_recipe(recipe: Recipe, lock: Lock | None = None) -> ImageSpec:
    """The image spec the recipe names (or the one its `lock` carries).

    A missing spec raises a `RecipeError` naming the recipe's `image` field, caused by the
    `ImageSpecNotFound` (which `repro recipe check` reports at that field).
    """
    if lock is not None and lock.image_spec is not None:
        return lock.image_spec
    try:
        return load_image_spec(recipe.image, images_dir_for(recipe))
    except ImageSpecNotFound as err:
        shown, path = locate(recipe, ("image",))
        raise RecipeError(f"{shown}: {path}: {err.message}", hint=err.hint) from err


def catalog_for_recipe(
    recipe: Recipe, image: ImageSpec | None = None, lock: Lock | None = None
) -> Catalog:
    """The option catalog to render and check the recipe with (its `lock`'s, when it has one)."""
    if lock is not None and lock.catalog is not None:
        return lock.catalog
    return effective_catalog(image or image_for_recipe(recipe, lock))
