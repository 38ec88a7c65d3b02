"""Finding and loading recipes: names, paths, `extends:` chains and lock files.

`load_recipe(ref)` accepts
- a name (`kimi26-ep4-dflash`), looked up as `<recipes dir>/<name>.yaml`; the recipes dir is
  `recipes_dir`, else `$REPRO_RECIPES_DIR`, else `./recipes`;
- a path to a recipe file (`recipes/kimi26-ep4-dflash.yaml`);
- a lock file: JSON (or YAML) with a top-level `recipe` key holding the fully resolved recipe
  (the lock stage writes it). `load_recipe_document` also returns the whole lock document,
  which the lock stage reads as a `Lock` (`repro.lock.load_locked`).

`extends:` names a parent (a name looked up next to the child, then in the recipes dir, or a
path relative to the child). The parent is merged under the child: mappings merge key by
key, lists and scalars replace, an explicit `null` removes. `name`, `description` and
`extends` belong to their own file and are not inherited.

Every file read (the recipe, its parents) must lie, symlinks followed, inside the project
(the recipes dir's parent) or the folder of a file named on the command line: a link in
`recipes/` or an `extends: ../../etc/shadow` cannot make repro read (and print in its errors)
a file elsewhere on the machine.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from repro import fileread
from repro.errors import RecipeError, short_repr, suggestion
from repro.recipe.findings import display_path
from repro.recipe.yamlio import Document, origin, problem_lines, read_mapping
from repro.schema.recipe import Recipe
from repro.schema.validation import format_loc
from repro.settings import RECIPES_DIR

RECIPE_SUFFIXES = (".yaml", ".yml")
YAML_LOCK_SUFFIXES = (".lock.yaml", ".lock.yml")  # a lock written as YAML, not a recipe
NOT_INHERITED = frozenset({"name", "description", "extends"})
MAX_EXTENDS_DEPTH = 32


def default_recipes_dir() -> Path:
    """`$REPRO_RECIPES_DIR`, else `recipes/` under the current directory."""
    env = RECIPES_DIR.read()
    return Path(env) if env else Path.cwd() / "recipes"


def list_recipe_files(recipes_dir: Path | None = None) -> list[Path]:
    """Every recipe file in the recipes dir, sorted by name."""
    root = recipes_dir or default_recipes_dir()
    if not root.is_dir():
        raise RecipeError(
            f"no recipes directory at {display_path(root)}",
            hint=f"run from the project root, or set {RECIPES_DIR.name}",
        )
    files = [p for p in root.iterdir() if p.suffix in RECIPE_SUFFIXES and p.is_file()]
    return sorted(files, key=lambda p: p.stem)


def _looks_like_path(ref: str) -> bool:
    return "/" in ref or os.sep in ref or ref.endswith((*RECIPE_SUFFIXES, ".json"))


def resolve_recipe_path(ref: str | Path, recipes_dir: Path | None = None) -> Path:
    """The file `ref` names: a path as given, or `<recipes dir>/<ref>.yaml`."""
    if isinstance(ref, Path) or _looks_like_path(ref):
        path = Path(ref)
        bare = not isinstance(ref, Path) and "/" not in ref and os.sep not in ref
        if not path.is_file() and bare and recipes_dir is not None:
            path = recipes_dir / ref  # "demo.yaml": a file name in the recipes dir
        if not path.is_file():
            raise RecipeError(
                f"{display_path(path)}: no such recipe or lock file",
                hint="give a recipe name (see `repro recipe list`) or an existing file",
            )
        return path
    root = recipes_dir or default_recipes_dir()
    for suffix in RECIPE_SUFFIXES:
        candidate = root / f"{ref}{suffix}"
        if candidate.is_file():
            return candidate
    known = [p.stem for p in root.iterdir() if p.suffix in RECIPE_SUFFIXES] if root.is_dir() else []
    where = display_path(root)
    raise RecipeError(
        f"no recipe named '{ref}' in {where}{suggestion(ref, known)}",
        hint=(
            f"recipes there: {', '.join(sorted(known))}"
            if known
            else f"run from the project root, or set {RECIPES_DIR.name}"
        ),
    )


def _parent_path(ref: str, child: Path, recipes_dir: Path | None) -> Path:
    if _looks_like_path(ref):
        path = (child.parent / ref) if not Path(ref).is_absolute() else Path(ref)
        if path.is_file():
            return path
        raise RecipeError(f"{display_path(child)}: extends: no recipe file {display_path(path)}")
    dirs = [child.parent] + ([recipes_dir] if recipes_dir and recipes_dir != child.parent else [])
    for folder in dirs:
        for suffix in RECIPE_SUFFIXES:
            candidate = folder / f"{ref}{suffix}"
            if candidate.is_file():
                return candidate
    known = sorted(
        {
            p.stem
            for folder in dirs
            if folder.is_dir()
            for p in folder.iterdir()
            if p.suffix in RECIPE_SUFFIXES
        }
    )
    raise RecipeError(
        f"{display_path(child)}: extends: no parent recipe '{ref}'{suggestion(ref, known)}",
        hint=f"recipes next to it: {', '.join(known)}" if known else None,
    )


def readable_roots(recipes_dir: Path, named: Path | None = None) -> tuple[Path, ...]:
    """The folders recipe files may be read from: the project and, for a file the user named
    on the command line, that file's own folder."""
    project = recipes_dir.absolute().parent
    return (project,) if named is None else (project, named.absolute().parent)


def inside(path: Path, roots: tuple[Path, ...], what: str = "recipe") -> Path:
    """`path`, refused when it (its symlinks followed) leads outside every one of `roots`."""
    if any(fileread.within(path, root) for root in roots):
        return path
    raise RecipeError(
        f"{display_path(path)}: this {what} file leads outside the project",
        hint="repro reads recipes from the project, or a file you name on the command line; "
        "copy the file into the project instead of linking to it",
    )


def merge(parent: dict[str, Any], child: dict[str, Any]) -> dict[str, Any]:
    """`child` over `parent`: mappings merge key by key; lists and scalars replace; null
    removes the key (its default applies: `drafter: null`, an inherited env variable)."""
    out = dict(parent)
    for key, value in child.items():
        if value is None and key in out:
            del out[key]
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def _load_chain(
    path: Path,
    recipes_dir: Path | None,
    seen: list[Path],
    roots: tuple[Path, ...],
    doc: Document | None = None,
) -> tuple[dict[str, Any], list[Document]]:
    """The merged data of `path` and its ancestors, and their documents (child first)."""
    resolved = path.resolve()
    if resolved in seen:
        cycle = " -> ".join(display_path(p) for p in [*seen[seen.index(resolved) :], resolved])
        raise RecipeError(
            f"{display_path(seen[-1])}: extends: cycle {cycle}",
            hint="a recipe cannot extend itself, directly or through its parents",
        )
    if len(seen) >= MAX_EXTENDS_DEPTH:
        raise RecipeError(f"{display_path(path)}: extends: more than {MAX_EXTENDS_DEPTH} levels")
    doc = doc or read_mapping(path, "recipe")
    ref = doc.data.get("extends")
    if ref is None:
        return dict(doc.data), [doc]
    if not isinstance(ref, str) or not ref.strip():
        raise RecipeError(
            f"{display_path(path)}: extends: expected a recipe name or path, got {short_repr(ref)}"
        )
    parent = inside(_parent_path(ref, path, recipes_dir), roots, "extends")
    parent_data, docs = _load_chain(parent, recipes_dir, [*seen, resolved], roots)
    inherited = {k: v for k, v in parent_data.items() if k not in NOT_INHERITED}
    return merge(inherited, doc.data), [doc, *docs]


def _validate(data: dict[str, Any], docs: list[Document], prefix: tuple[str, ...]) -> Recipe:
    try:
        return Recipe.model_validate(data)
    except ValidationError as exc:
        problems = problem_lines(exc, Recipe, docs, loc_prefix=prefix)
        raise RecipeError.from_problems(
            problems, hint="`repro recipe schema` prints every field with its description"
        ) from None
    except RecursionError:
        raise RecipeError(f"{display_path(docs[0].path)}: nested too deeply") from None


def _check_own_name(doc: Document, recipes_dir: Path) -> None:
    """Refuse a `name:` that is another recipe file's name: the two would share a lock,
    run folders and results, the last one locked silently replacing the other's."""
    name = doc.data.get("name")
    if not isinstance(name, str) or name == doc.path.stem:
        return
    for folder in dict.fromkeys([doc.path.parent, recipes_dir]):
        for suffix in RECIPE_SUFFIXES:
            other = folder / f"{name}{suffix}"
            if other.is_file() and not other.samefile(doc.path):
                raise RecipeError(
                    f"{display_path(doc.path)}: name: '{name}' is the name of "
                    f"{display_path(other)}",
                    hint="a recipe's name is its own: remove `name:` (it defaults to the "
                    "file name) or choose one no other recipe has",
                )


def is_lock_document(doc: Document) -> bool:
    """JSON files, `*.lock.yaml` files and documents with a `lock_version` are locks."""
    name = doc.path.name
    return (
        doc.path.suffix == ".json"
        or name.endswith(YAML_LOCK_SUFFIXES)
        or "lock_version" in doc.data
    )


def _load_lock(doc: Document) -> Recipe:
    shown = display_path(doc.path)
    data = doc.data.get("recipe")
    if not isinstance(data, dict):
        raise RecipeError(
            f"{shown}: recipe: a lock file holds the resolved recipe under a top-level "
            f"'recipe' mapping, got {short_repr(data)}"
        )
    if data.get("extends"):
        raise RecipeError(
            f"{shown}: recipe.extends: a lock holds a fully resolved recipe; expected null"
        )
    recipe = _validate(data, [doc], ("recipe",))
    recipe._source_path = doc.path
    recipe._chain = [doc.path]
    recipe._origins = {doc.path: doc.data}
    recipe._lines = {doc.path: doc.lines}
    return recipe


def load_recipe(ref: str | Path, recipes_dir: Path | None = None) -> Recipe:
    """Load, merge (`extends`) and validate the recipe `ref` names (a name, path or lock)."""
    return load_recipe_document(ref, recipes_dir)[0]


def load_recipe_document(
    ref: str | Path, recipes_dir: Path | None = None
) -> tuple[Recipe, dict[str, Any] | None]:
    """The recipe `ref` names and, when `ref` is a lock file, the whole lock document."""
    root = recipes_dir or default_recipes_dir()
    path = resolve_recipe_path(ref, root)
    named = path if isinstance(ref, Path) or _looks_like_path(ref) else None
    roots = readable_roots(root, named)
    first = read_mapping(inside(path, roots), "recipe")
    if is_lock_document(first):
        recipe = _load_lock(first)
        recipe._recipes_dir = root
        return recipe, first.data
    data, docs = _load_chain(path, root, [], roots, first)
    _check_own_name(first, root)
    data.setdefault("name", path.stem)
    recipe = _validate(data, docs, ())
    recipe._source_path = path
    recipe._chain = [d.path for d in docs]
    recipe._origins = {d.path: d.data for d in docs}
    recipe._lines = {d.path: d.lines for d in docs}
    recipe._recipes_dir = root
    return recipe, None


def from_lock_file(recipe: Recipe) -> bool:
    """Whether `recipe` was loaded from a lock file (its fields then sit under `recipe.`)."""
    if not recipe.chain:
        return False
    path = recipe.chain[0]
    return is_lock_document(Document(path=path, data=recipe._origins.get(path, {})))


def locate(recipe: Recipe, loc: tuple[str | int, ...]) -> tuple[str, str]:
    """(file, field path) to name in a message about the field at `loc` of `recipe`.

    The file is the one in the `extends` chain that supplied the value (child-most on ties);
    for a recipe loaded from a lock, paths are under `recipe.`.
    """
    prefix: tuple[str, ...] = ("recipe",) if from_lock_file(recipe) else ()
    docs = [
        Document(path=p, data=recipe._origins.get(p, {}), lines=recipe._lines.get(p, {}))
        for p in recipe.chain
    ]
    full = (*prefix, *loc)
    doc, _line = origin(full, docs)
    shown = display_path(doc.path) if doc else display_path(recipe.source_path)
    return shown, format_loc(full)


MAX_EDITS_SHOWN = 4  # the named file's own settings listed beside a refusal


def locate_for_user(recipe: Recipe, loc: tuple[str | int, ...]) -> tuple[str, str, str]:
    """(file, field path, context) for a refusal the whole recipe causes (SGLang's start-up
    refusing the combination): the file the user named, never a parent it extends. When a
    parent supplied the field, the context says where (file and line) and which of the named
    file's own settings (with their lines) joined it, e.g. `; speculative.algorithm comes
    from recipes/kimi26-ep4-dflash.yaml (line 12) (extends:, line 1); this file sets
    parallelism.dp (line 4), parallelism.dp_attention (line 5)`."""
    shown, path = locate(recipe, loc)
    if not recipe.chain or from_lock_file(recipe):
        return shown, path, ""
    child = Document(recipe.chain[0], recipe._origins.get(recipe.chain[0], {}),
                     recipe._lines.get(recipe.chain[0], {}))  # fmt: skip
    mine = display_path(child.path)
    if shown == mine:
        line = _line_of(child, loc)
        return mine, path, f" ({mine} line {line})" if line else ""
    parent = next((p for p in recipe.chain if display_path(p) == shown), None)
    parent_line = _line_of(
        Document(parent, recipe._origins.get(parent, {}), recipe._lines.get(parent, {})), loc
    ) if parent is not None else None  # fmt: skip
    at = f" (line {parent_line})" if parent_line else ""
    extends = child.lines.get(("extends",))
    context = f"; {path} comes from {shown}{at}"
    context += f" (extends:, line {extends})" if extends else ""
    edits = [
        f"{format_loc(key)} (line {line})"
        for key, line in child.lines.items()
        if key and key[0] not in NOT_INHERITED and _is_leaf(child.data, key)
    ]
    if edits:
        more = len(edits) - MAX_EDITS_SHOWN
        shown_edits = ", ".join(edits[:MAX_EDITS_SHOWN]) + (f" and {more} more" if more > 0 else "")
        context += f"; this file sets {shown_edits}"
    return mine, path, context


def _line_of(doc: Document, loc: tuple[str | int, ...]) -> int | None:
    for cut in range(len(loc), 0, -1):
        if line := doc.lines.get(loc[:cut]):
            return line
    return None


def _is_leaf(data: dict[str, Any], key: tuple[Any, ...]) -> bool:
    """Whether `key` names a value the file sets (not a mapping holding others)."""
    value: Any = data
    for part in key:
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    return not isinstance(value, dict)
