"""What every rule sees (`Context`) and returns (`Issue`), with small helpers."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from repro.recipe.argv_check import check_argv
from repro.recipe.findings import Loc, display_path
from repro.recipe.loader import locate
from repro.recipe.render import Issue, analyze
from repro.schema.deployment import DrafterFacts, ModelFacts
from repro.schema.option_catalog import Catalog
from repro.schema.recipe import Recipe

if TYPE_CHECKING:
    from repro.schema.image import ImageSpec

__all__ = [
    "ALGORITHM_ALIASES",
    "DFLASH_FAMILY",
    "Context",
    "Issue",
    "Rule",
    "SetOption",
    "algorithm",
    "edited",
    "err",
    "sglang_release",
    "simulated",
    "warn",
]

DFLASH_FAMILY = ("DFLASH", "DDTREE")  # DDTREE reuses the DFlash drafter and worker

# CLI spellings SGLang resolves to a builtin algorithm: NEXTN is a reserved alias of EAGLE
# (sglang 0.5.23 srt/speculative/spec_registry.py `_RESERVED_ALIASES`, resolved by
# spec_info.py `SpeculativeAlgorithm.from_string` and arg_groups/speculative_hook.py
# `_resolve_speculative_algorithm_alias`).
ALGORITHM_ALIASES = {"NEXTN": "EAGLE"}


@dataclass(frozen=True)
class SetOption:
    """An option the rendered argv sets: where it comes from, its spelling and values."""

    loc: Loc
    spelling: str
    values: tuple[str, ...]

    @property
    def value(self) -> str | bool:
        """The (last) value, or True for a flag."""
        return self.values[-1] if self.values else True


@dataclass
class Context:
    """What a rule sees: the recipe, its image spec and the catalog in force (`image_catalog`:
    that catalog was extracted from the built image and kept in the lock, not a stand-in), and
    the drafter's block size the lock read from its config.json (None before a lock)."""

    recipe: Recipe
    image: ImageSpec | None = None
    catalog: Catalog | None = None
    image_catalog: bool = False
    drafter_block_size: int | None = None
    model_facts: ModelFacts | None = None  # the lock's config.json, else the recipe's
    drafter_facts: DrafterFacts | None = None
    facts_source: str = "declared in the recipe"  # how messages name where the facts are from
    # (file naming the drafter, file whose `drafter.facts` were left out as another drafter's)
    drafter_facts_elsewhere: tuple[str, str] | None = None
    drafter_architectures: list[str] = field(default_factory=list)

    @cached_property
    def options(self) -> dict[str, SetOption]:
        """Every option the rendered argv sets (structured fields and extra_args), by dest, as
        the catalog in force reads it; empty without a catalog."""
        if self.catalog is None:
            return {}
        found: dict[str, SetOption] = {}
        for loc, tokens in analyze(self.recipe, self.catalog).origins:
            opt = self.catalog.find(tokens[0])
            if opt is not None:
                found.setdefault(opt.dest, SetOption(loc, tokens[0], tuple(tokens[1:])))
        parsed, _problems = check_argv(self.recipe.server.extra_args, self.catalog)
        for arg in parsed:
            loc = ("server", "extra_args", arg.index)
            found.setdefault(arg.option.dest, SetOption(loc, arg.spelling, arg.values))
        return found

    @property
    def stand_in(self) -> bool:
        """The catalog in force is a shipped stand-in, not the one extracted from the image."""
        return (
            not self.image_catalog
            and self.image is not None
            and self.image.stand_in_catalog is not None
        )

    @property
    def catalog_words(self) -> str:
        """How messages name the catalog in force, e.g. "SGLang 0.5.23 (stand-in ...)"."""
        if self.catalog is None:
            return "this image's SGLang"
        words = f"SGLang {self.catalog.sglang_version}"
        if self.stand_in and self.image is not None:
            words += f" (the stand-in for image '{self.image.name}' until `repro lock`)"
        return words


Rule = Callable[[Context], list[Issue]]


def err(loc: tuple[str | int, ...], message: str, rule: str) -> Issue:
    return Issue(loc, "error", message, rule)


def warn(loc: tuple[str | int, ...], message: str, rule: str) -> Issue:
    return Issue(loc, "warning", message, rule)


def edited(ctx: Context, *locs: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """Of the fields that together cause an issue, the one set in the file closest to the
    user's edit (child-most in the `extends` chain), so the message names that file."""
    chain = [display_path(p) for p in ctx.recipe.chain]

    def rank(loc: tuple[str | int, ...]) -> int:
        if not _is_set(ctx.recipe, loc):  # a default: no file wrote it
            return len(chain) + 1
        shown, _ = locate(ctx.recipe, loc)
        return chain.index(shown) if shown in chain else len(chain)

    return min(locs, key=rank)  # on a tie, the first named


def _is_set(model: object, loc: tuple[str | int, ...]) -> bool:
    for key in loc[:-1]:
        model = getattr(model, str(key), None)
    fields_set: set[str] = getattr(model, "model_fields_set", set())
    return str(loc[-1]) in fields_set


def simulated(ctx: Context) -> bool:
    return bool(ctx.image and ctx.image.simulated) or ctx.recipe.topology.gpu_runtime == "none"


def algorithm(ctx: Context) -> str | None:
    spec = ctx.recipe.speculative
    return spec.algorithm if spec else None


def sglang_release(version: str | None) -> tuple[int, int, int] | None:
    """(major, minor, patch) of a release version; None for a dev build (a nightly reports
    0.0.0.devN+g<sha>, which says nothing about its age) or anything else."""
    match = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?", version or "")
    if match is None or "dev" in (version or ""):
        return None
    return int(match[1]), int(match[2]), int(match[3] or 0)
