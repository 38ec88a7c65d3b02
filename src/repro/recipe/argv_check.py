"""The option catalogs repro ships, and reading an argv against a catalog.

repro ships the catalog of each SGLang version it knows as package data
(`repro/catalogs/sglang-<v>.json`; the type is `repro.schema.option_catalog.Catalog`). `check_argv`
reads an argv the way argparse would and reports unknown options (with the closest valid
one), bad values, wrong arity and deprecated spellings.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from importlib import resources

from repro.errors import RecipeError, did_you_mean, short_repr
from repro.schema.option_catalog import Catalog, CatalogOption

# --- shipped catalogs ---------------------------------------------------------------------
_CACHE: dict[str, Catalog] = {}


def catalog_file_name(version: str) -> str:
    """The shipped catalog file of SGLang `version` (in `repro/catalogs/`)."""
    return f"sglang-{version}.json"


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else -1 for part in version.split("."))


def available_catalog_versions() -> list[str]:
    """SGLang versions whose option catalog ships with repro, oldest first."""
    root = resources.files("repro").joinpath("catalogs")
    names = [p.name for p in root.iterdir() if p.name.startswith("sglang-")]
    return sorted(
        (n.removeprefix("sglang-").removesuffix(".json") for n in names), key=_version_key
    )


def first_release_with_architecture(name: str) -> str | None:
    """The oldest shipped release whose SGLang registers the model class `name`."""
    return next(
        (v for v in available_catalog_versions() if name in load_catalog(v).model_architectures),
        None,
    )


def release_before(day: date) -> str | None:
    """The newest shipped release built on or before `day` (what a nightly of that day is
    closest to: everything it has, the release has or is about to have), or None."""
    dated = [(load_catalog(v).released, v) for v in available_catalog_versions()]
    before = [(released, v) for released, v in dated if released and released <= day.isoformat()]
    return max(before)[1] if before else None


def load_catalog(version: str) -> Catalog:
    """The option catalog of SGLang `version`, from repro's package data."""
    if version in _CACHE:
        return _CACHE[version]
    resource = resources.files("repro").joinpath("catalogs", f"sglang-{version}.json")
    if not resource.is_file():
        known = available_catalog_versions()
        raise RecipeError(
            f"no SGLang option catalog for version '{version}'"
            + (
                f" (did you mean '{did_you_mean(version, known)}'?)"
                if did_you_mean(version, known)
                else ""
            ),
            hint=f"catalogs shipped: {', '.join(known) or 'none'}; extract a release's with "
            "`repro image catalog VERSION --into src/repro/catalogs`",
        )
    data = json.loads(resource.read_text(encoding="utf-8"))
    catalog = Catalog.from_dict(data, origin=f"sglang-{version}.json")
    _CACHE[version] = catalog
    return catalog


# --- reading an argv against a catalog -----------------------------------------------------
@dataclass(frozen=True)
class ArgProblem:
    """A problem in an argv: `index` is the token it is about."""

    index: int
    severity: str  # "error" | "warning"
    message: str


@dataclass(frozen=True)
class ParsedArg:
    """One option occurrence in an argv, with its values."""

    index: int
    spelling: str
    option: CatalogOption
    values: tuple[str, ...]


def _looks_like_option(token: str) -> bool:
    return token.startswith("--") or (len(token) > 1 and token[0] == "-" and not is_number(token))


def is_number(token: str) -> bool:
    """A negative number is a value, not an option (`--x -1`)."""
    try:
        float(token)
    except ValueError:
        return False
    return True


def check_argv(argv: Sequence[str], catalog: Catalog) -> tuple[list[ParsedArg], list[ArgProblem]]:
    """Read `argv` as argparse would with this catalog; return the options and the problems."""
    parsed: list[ParsedArg] = []
    problems: list[ArgProblem] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if not isinstance(token, str):
            problems.append(ArgProblem(i, "error", f"expected a string, got {short_repr(token)}"))
            i += 1
            continue
        if not _looks_like_option(token):
            problems.append(
                ArgProblem(i, "error", f"value {short_repr(token)} follows no option that takes it")
            )
            i += 1
            continue
        inline: str | None = None
        spelling = token
        if token.startswith("--") and "=" in token:
            spelling, inline = token.split("=", 1)
        opt = catalog.find(spelling)
        if opt is None:
            best = catalog.suggest(spelling)
            near = f" (did you mean '{best}'?)" if best else ""
            problems.append(ArgProblem(i, "error", f"unknown SGLang option '{spelling}'{near}"))
            i += 1
            while i < len(argv) and isinstance(argv[i], str) and not _looks_like_option(argv[i]):
                i += 1  # skip its values, they belong to the unknown option
            continue
        if opt.deprecated:
            repl = opt.replacement
            problems.append(
                ArgProblem(
                    i,
                    "warning",
                    f"'{spelling}' is deprecated in SGLang {catalog.sglang_version}"
                    + (f"; use {repl} instead" if repl else ""),
                )
            )
        low, high = opt.arity
        values: list[str] = []
        start = i
        i += 1
        if inline is not None:
            values.append(inline)
            if high == 0:
                problems.append(ArgProblem(start, "error", f"'{spelling}' takes no value"))
        else:
            while (high is None or len(values) < high) and i < len(argv):
                nxt = argv[i]
                if not isinstance(nxt, str) or _looks_like_option(nxt):
                    break
                values.append(nxt)
                i += 1
        if len(values) < low:
            need = "a value" if low == 1 else f"at least {low} values"
            problems.append(ArgProblem(start, "error", f"'{spelling}' needs {need}"))
        if high != 0:
            for value in values:
                why = opt.check_value(value)
                if why:
                    problems.append(ArgProblem(start, "error", why))
        parsed.append(ParsedArg(start, spelling, opt, tuple(values)))
    return parsed, problems
