"""`repro image bump`: re-pin an image spec's base to a newer tag, and say first what that
changes for every recipe using it.

The new tag is pulled (its digest is what the registry gave), its own option catalog read
(`image_catalog`) and compared, per recipe, with the catalog the recipe is checked against
today: options it uses that were added, removed or changed, and the findings of
`repro recipe check` that the new image brings. The spec is then re-pinned in place (tag,
digest, the SGLang it reports); nothing is rebuilt until the recipes are locked again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from repro import fileread
from repro.errors import RecipeError, ReproError
from repro.fsutil import write_atomic
from repro.image.image_catalog import catalog_of_image, pull_pinned
from repro.lock import catalog_drift, recipe_options
from repro.progress import Progress, quiet
from repro.recipe import check_recipe, load_recipe
from repro.recipe.argv_check import release_before
from repro.recipe.images import (
    default_images_dir,
    effective_catalog,
    load_image_spec,
    with_patch_set,
)
from repro.recipe.loader import default_recipes_dir, list_recipe_files
from repro.schema.image import ImageSpec
from repro.schema.lock import Locked
from repro.schema.option_catalog import Catalog
from repro.schema.recipe import Recipe

# lmsysorg/sglang nightly tags: nightly-dev-[cu13-]YYYYMMDD-<sha8>
NIGHTLY_TAG = re.compile(r"nightly-.*?(\d{4})(\d{2})(\d{2})-([0-9a-f]{7,40})$")


@dataclass
class RecipeDrift:
    """What the new image changes for one recipe."""

    recipe: str
    options: int  # how many options its argv sets
    changes: list[str] = field(default_factory=list)  # options added, removed, changed
    new_errors: list[str] = field(default_factory=list)  # check errors the new image brings


@dataclass
class Bump:
    spec: str
    old: str  # the pinned base before
    new: str  # the pinned base after
    old_catalog: str  # "SGLang 0.5.17 (stand-in)" or the version
    new_catalog: str
    recipes: list[RecipeDrift]
    written: Path | None


def _nightly_date(tag: str) -> str | None:
    match = NIGHTLY_TAG.search(tag)
    if match is None:
        return None
    try:
        return date(int(match[1]), int(match[2]), int(match[3])).isoformat()
    except ValueError:
        return None


def _errors(recipe: Recipe, spec: ImageSpec, catalog: Catalog) -> list[str]:
    findings = check_recipe(Locked(recipe, None, None, spec, catalog))
    return [f"{f.path}: {f.message}" for f in findings if f.severity == "error"]


def _recipes_using(spec: ImageSpec, recipes_dir: Path) -> list[Recipe]:
    found = []
    for path in list_recipe_files(recipes_dir):
        try:
            recipe = load_recipe(path, recipes_dir)
        except RecipeError:
            continue  # a broken recipe is `repro recipe check`'s to report
        if recipe.image == spec.name:
            found.append(recipe)
    return found


def _recipes_of(spec_file: Path, images_dir: Path) -> Path:
    """The recipes a bump of `spec_file` looks through: those beside its images folder when
    it lies in one, else the current project's. A spec named elsewhere on the machine
    (`repro image bump /some/where/x.yaml`) never has repro read the files around it."""
    if fileread.within(spec_file, images_dir):
        return images_dir.parent / "recipes"
    return default_recipes_dir()


def _repinned(spec: ImageSpec, tag: str, digest: str, reported: str) -> ImageSpec:
    base = spec.base.model_copy(
        update={
            "tag": tag,
            "digest": digest,
            "digest_unverified": False,
            "sglang_version": reported if spec.base.sglang_version else None,
            "sglang_commit": None,
            "sglang_commit_date": _nightly_date(tag) or spec.base.sglang_commit_date,
        }
    )
    return spec.model_copy(update={"base": base})


def _set_base_key(lines: list[str], key: str, value: str | None) -> list[str]:
    """The spec's lines with `base.<key>` set to `value` (removed for None; left alone when
    the spec does not state it). Comments elsewhere are kept as written."""
    start = lines.index("base:") if "base:" in lines else -1
    out = list(lines)
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if line and not line.startswith((" ", "#")):
            break
        if line.startswith(f"  {key}:"):
            if value is None:
                del out[i]
            else:
                out[i] = f"  {key}: {value}"
            break
    return out


def rewrite_spec(path: Path, old: ImageSpec, new: ImageSpec) -> None:
    """Re-pin the spec file in place: tag, digest, what the base reports, the stand-in."""
    lines = path.read_text(encoding="utf-8").splitlines()
    base = new.base
    lines = _set_base_key(lines, "tag", base.tag)
    lines = _set_base_key(lines, "digest", base.digest)
    lines = _set_base_key(lines, "digest_unverified", None)
    lines = _set_base_key(lines, "sglang_commit", None)
    if base.sglang_version:
        lines = _set_base_key(lines, "sglang_version", base.sglang_version)
    if base.sglang_commit_date:
        lines = _set_base_key(lines, "sglang_commit_date", base.sglang_commit_date)
    claimed = old.stand_in_catalog.version if old.stand_in_catalog else None
    if claimed and base.sglang_commit_date:
        chosen = release_before(date.fromisoformat(base.sglang_commit_date))
        if chosen:
            lines = [
                f'  version: "{chosen}"' if line == f'  version: "{claimed}"' else line
                for line in lines
            ]
    before = path.read_text(encoding="utf-8")
    write_atomic(path, "\n".join(lines) + "\n")
    try:
        load_image_spec(path)
    except RecipeError:
        write_atomic(path, before)  # never leave a spec that does not load
        raise


def bump_image(
    ref: str,
    tag: str,
    *,
    images_dir: Path | None = None,
    recipes_dir: Path | None = None,
    write: bool = True,
    progress: Progress = quiet,
) -> Bump:
    """Re-pin spec `ref` to `tag` of its base repository; the drift of every recipe on it."""
    spec = load_image_spec(ref, images_dir)
    if spec.base.local or spec.source_path is None:
        raise ReproError(
            f"image spec {spec.name} is built on this machine ({spec.base.image}): nothing to "
            "re-pin from a registry"
        )
    old_pin = spec.base.reference
    progress(f"pulling {spec.base.image}:{tag}")
    pinned = pull_pinned(f"{spec.base.image}:{tag}")
    progress(f"reading the options of {pinned}")
    own = catalog_of_image(pinned)
    new_spec = _repinned(spec, tag, pinned.rsplit("@", 1)[1], own.sglang_version)
    old_catalog, new_catalog = effective_catalog(spec), with_patch_set(new_spec, own)
    folder = recipes_dir or _recipes_of(spec.source_path, images_dir or default_images_dir())
    drifts = []
    for recipe in _recipes_using(spec, folder):
        used = recipe_options(recipe, old_catalog, new_catalog)
        before = set(_errors(recipe, spec, old_catalog))
        drifts.append(
            RecipeDrift(
                recipe=recipe.name,
                options=len(used),
                changes=catalog_drift(old_catalog, new_catalog, used),
                new_errors=[e for e in _errors(recipe, new_spec, new_catalog) if e not in before],
            )
        )
    if write:
        rewrite_spec(spec.source_path, spec, new_spec)
    was = f"SGLang {old_catalog.sglang_version}"
    if spec.stand_in_catalog is not None:
        was += " (the stand-in release catalog)"
    return Bump(
        spec=spec.name,
        old=old_pin,
        new=new_spec.base.reference,
        old_catalog=was,
        new_catalog=f"SGLang {own.sglang_version} (the image's own)",
        recipes=drifts,
        written=spec.source_path if write else None,
    )
