"""What every rule sees (`Context`) and returns (`Issue`), with small helpers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from repro.recipe.render import Issue
from repro.spec.catalog import Catalog
from repro.spec.recipe import Recipe

if TYPE_CHECKING:
    from repro.spec.image import ImageSpec

__all__ = ["DFLASH_FAMILY", "Context", "Issue", "Rule", "algorithm", "err", "simulated", "warn"]

DFLASH_FAMILY = ("DFLASH", "DDTREE")  # DDTREE reuses the DFlash drafter and worker


@dataclass
class Context:
    recipe: Recipe
    image: ImageSpec | None = None
    catalog: Catalog | None = None


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
