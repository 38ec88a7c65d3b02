"""From a campaign file to its points: each an ordinary recipe file, the recipe it came from
with the point's overrides, the campaign's bench plan and acceptance plan.

A point file is what `repro run` runs and what the run folder records, so a point can be run,
checked or rendered by hand (`repro recipe check <campaign dir>/recipes/<point>.yaml`). It is
the source recipe resolved, not a file that extends it: a campaign folder on a shared
filesystem holds everything its points run.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from repro.campaign.images import copy_image_specs
from repro.errors import RecipeError
from repro.fsutil import write_atomic
from repro.recipe import load_recipe
from repro.recipe.images import images_dir_for
from repro.recipe.loader import default_recipes_dir, inside, readable_roots, resolve_recipe_path
from repro.recipe.yamlio import problem_lines, read_mapping
from repro.schema.campaign import Campaign

_UNSAFE = re.compile(r"[^a-z0-9._-]+")
MAX_NAME = 100


@dataclass(frozen=True)
class Point:
    """One point of a campaign: a recipe file, and what the campaign set on it."""

    name: str
    source: Path  # the recipe file it extends
    overrides: dict[str, Any] = field(default_factory=dict)  # field path -> value
    labels: dict[str, str] = field(default_factory=dict)  # axis -> value or variant


def load_campaign(path: Path) -> Campaign:
    """The campaign file as its model; errors name the file, the field and what was expected."""
    doc = read_mapping(path, "campaign")
    data = dict(doc.data)
    data.setdefault("name", _safe(path.stem))
    try:
        return Campaign.model_validate(data)
    except ValidationError as exc:
        problems = problem_lines(exc, Campaign, [doc])
        raise RecipeError.from_problems(
            problems, hint="`repro campaign schema` prints every field with its description"
        ) from None


def expand(
    campaign: Campaign, recipes_dir: Path | None = None, named: Path | None = None
) -> list[Point]:
    """Every point: the explicit ones, then the base recipe under each matrix combination.
    A recipe it names lies in the project or beside the campaign file `named` (the one file
    the user named): a path that leads elsewhere (`/etc/...`, `../../x`, a link) is refused
    before it is read."""
    roots = readable_roots(recipes_dir or default_recipes_dir(), named)

    def source_of(ref: str) -> Path:
        return inside(resolve_recipe_path(ref, recipes_dir), roots)

    points = []
    for explicit in campaign.points:
        source = source_of(explicit.recipe)
        name = explicit.name or load_recipe(source, recipes_dir).name
        points.append(Point(name, source, dict(explicit.set)))
    if campaign.base is not None:
        source = source_of(campaign.base)
        base = load_recipe(source, recipes_dir)
        for combo in _combinations(campaign):
            labels = {axis: label for axis, (label, _) in combo.items()}
            overrides: dict[str, Any] = {}
            for _label, sets in combo.values():
                overrides.update(sets)
            suffix = ".".join(_safe(f"{_short(a)}-{v}") for a, v in labels.items())
            name = f"{base.name}.{suffix}" if suffix else base.name
            points.append(Point(_bounded(name), source, overrides, labels))
    seen: dict[str, Point] = {}
    for point in points:
        if point.name in seen:
            raise RecipeError(
                f"campaign {campaign.name}: two points are named {point.name}",
                hint="give explicit points distinct `name:` values",
            )
        seen[point.name] = point
    return points


def write_point(point: Point, campaign: Campaign, folder: Path) -> Path:
    """The point's recipe file, `<folder>/<point>.yaml`: its source recipe resolved (no
    `extends:`, so the campaign folder holds every line a point runs, wherever it lies, and
    a run of it reads nothing outside it), the point's overrides, the campaign's plans; its
    image spec is copied into `<folder>/../images/` (`repro.campaign.images`)."""
    source = load_recipe(point.source)
    data = source.resolved()
    data.pop("extends", None)
    data["name"] = point.name
    labels = f" ({', '.join(f'{a}={v}' for a, v in point.labels.items())})"
    data["description"] = (
        f"Point {point.name} of campaign {campaign.name}{labels if point.labels else ''}, "
        f"from {point.source.resolve()}"
    )
    removed = [path for path, value in point.overrides.items() if value is None]
    for field_path, value in point.overrides.items():
        # a section one axis removes stays removed: another axis's field in it is moot
        if not any(field_path.startswith(f"{gone}.") for gone in removed):
            _set(data, field_path.split("."), value)
    _forget_replaced_facts(data, point.overrides, source.drafter.repo if source.drafter else None)
    if campaign.bench is not None:
        data["bench"] = campaign.bench.model_dump(mode="json")
    if campaign.accept is not None:
        data["accept"] = campaign.accept.model_dump(mode="json")
    if campaign.search is not None:
        data.setdefault("bench", {})["slo_search"] = {
            "limits": campaign.slos[campaign.search.slo],
            "extra_levels": campaign.search.extra_levels,
        }
    copy_image_specs(str(data.get("image")), images_dir_for(source), folder.parent)
    path = folder / f"{point.name}.yaml"
    write_atomic(path, yaml.safe_dump(data, sort_keys=False))
    return path


def _combinations(campaign: Campaign) -> list[dict[str, tuple[str, dict[str, Any]]]]:
    """Each matrix combination: axis -> (its label, the overrides it sets), minus exclusions."""
    axes: list[list[tuple[str, tuple[str, dict[str, Any]]]]] = []
    for axis, values in campaign.matrix.items():
        if isinstance(values, list):
            axes.append([(axis, (_label(v), {axis: v})) for v in values])
        else:
            axes.append([(axis, (name, sets)) for name, sets in values.items()])
    combos = []
    for combo in itertools.product(*axes) if axes else [()]:
        chosen = dict(combo)
        if not any(_matches(rule, chosen) for rule in campaign.exclude):
            combos.append(chosen)
    return combos


def _matches(rule: dict[str, Any], chosen: dict[str, tuple[str, dict[str, Any]]]) -> bool:
    return all(chosen[axis][0] == _label(value) for axis, value in rule.items())


def _label(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, dict | list):
        return hashlib.sha256(repr(value).encode()).hexdigest()[:8]
    return str(value)


def _short(axis: str) -> str:
    return axis.rsplit(".", 1)[-1]


def _safe(text: str) -> str:
    return _UNSAFE.sub("-", text.lower()).strip("-._") or "point"


def _bounded(name: str) -> str:
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}-{digest}"


def _forget_replaced_facts(
    data: dict[str, Any], overrides: dict[str, Any], source_repo: str | None
) -> None:
    """A point that swaps the drafter's repo without its facts (or size) drops the inherited
    ones: they are the replaced drafter's, and the fit is checked against config.json once
    locked (the size is then the known one of the new drafter, or unknown)."""
    repo = overrides.get("drafter.repo")
    drafter = data.get("drafter")
    if repo is None or repo == source_repo or not isinstance(drafter, dict):
        return
    for key in ("facts", "weights_gb"):
        if f"drafter.{key}" not in overrides:
            drafter.pop(key, None)


def _set(data: dict[str, Any], path: list[str], value: Any) -> None:
    node = data
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    node[path[-1]] = value
