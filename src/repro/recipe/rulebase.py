"""What every rule sees (`Context`) and returns (`Issue`), with small helpers."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from repro.recipe.argv_check import check_argv
from repro.recipe.findings import Loc
from repro.recipe.render import Issue, analyze
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
