"""A campaign: many recipes (or one recipe under a matrix of overrides) measured with one bench
plan, and the decision it should end in (SLOs, a price, the machine it ran on).

`campaigns/*.yaml` are validated against this model (`repro campaign schema` prints its JSON
Schema); `repro.campaign.points` expands it into points, each an ordinary recipe.

A matrix axis is either a list of values for one recipe field path
(`speculative.num_draft_tokens: [4, 8, 16]`) or a mapping of named variants, each a set of
field paths and values applied together (`drafter: {none: {drafter: null, speculative: null},
z-lab: {drafter.repo: z-lab/Kimi-K2.6-DFlash}}`). Points are the Cartesian product of the
axes, minus `exclude`.
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from repro.schema.base import NAME_PATTERN, Description, StrictModel
from repro.schema.level import Level
from repro.schema.recipe import Accept, Bench
from repro.schema.slo import SLO_KEYS, check_limits

MAX_POINTS = 1000
"""Points of one campaign at most (explicit ones plus matrix combinations before `exclude`):
counted from the file, before any point is made."""
FIELD_PATH_PATTERN = r"^[a-z_][a-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"
_FIELD_PATH = re.compile(FIELD_PATH_PATTERN)


def _field_path(path: str) -> str:
    if not _FIELD_PATH.match(path) or len(path) > 200:
        raise ValueError(
            f"{path!r} is not a recipe field path (dotted names such as parallelism.ep or "
            "env.SGLANG_X)"
        )
    return path


class CampaignSearch(StrictModel):
    """Narrow one SLO's boundary with extra levels at every point (`bench.slo_search`)."""

    slo: str = Field(description="The name of one of the campaign's `slos`.")
    extra_levels: int = Field(3, ge=1, le=16, description="Levels added per point at most.")


class CampaignPoint(StrictModel):
    """One explicit point: a recipe, optionally with overrides."""

    recipe: str = Field(max_length=500, description="A recipe name or a recipe file path.")
    name: str | None = Field(
        default=None, pattern=NAME_PATTERN, description="The point's name (default: the recipe's)."
    )
    set: dict[str, Any] = Field(
        default_factory=dict,
        description="Overrides: recipe field path -> value (null removes the field).",
    )

    @field_validator("set")
    @classmethod
    def _paths(cls, value: dict[str, Any]) -> dict[str, Any]:
        for path in value:
            _field_path(path)
        return value


class Campaign(StrictModel):
    """Recipes measured with one plan, ending in a decision."""

    name: str = Field(pattern=NAME_PATTERN, description="Campaign name (default: file name).")
    description: Description = Field("", max_length=10_000, description="What it decides.")
    machine: str = Field(
        pattern=NAME_PATTERN,
        description="A label of the machine it runs on (rtx-pro-6000x8, b300x8), shown in "
        "reports that put campaigns of several machines side by side.",
    )
    gpu_hour_usd: float | None = Field(
        default=None, gt=0, le=10_000, description="Price of one GPU-hour, for the cost estimate."
    )
    points: list[CampaignPoint] = Field(
        default_factory=list, max_length=MAX_POINTS, description="Explicit points."
    )
    base: str | None = Field(
        default=None, max_length=500, description="The recipe the matrix overrides (name or file)."
    )
    matrix: dict[str, list[Any] | dict[str, dict[str, Any]]] = Field(
        default_factory=dict,
        description="Axes over the base recipe: a field path with a list of values, or an "
        "axis name with named variants (each a mapping of field path -> value); the product "
        f"of the axes' lengths plus the explicit points is at most {MAX_POINTS}.",
    )
    exclude: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Matrix combinations to skip: axis -> value (or variant name).",
    )
    bench: Bench | None = Field(
        default=None, description="The bench plan every point runs (default: each recipe's own)."
    )
    accept: Accept | None = Field(
        default=None,
        description="The acceptance plan of every drafter point (default: each recipe's).",
    )
    slos: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="Named SLOs the decision is made under, each a mapping of level key -> "
        f"upper bound in ms (e.g. interactive: {{p90_ttft_ms: 2000, p90_tpot_ms: 50}}). Keys: "
        f"{', '.join(SLO_KEYS)}.",
    )
    search: CampaignSearch | None = Field(
        default=None,
        description="After each point's ladder, bisect between the last level that meets this "
        "SLO and the first that fails (e.g. {slo: interactive, extra_levels: 3}).",
    )

    @field_validator("slos")
    @classmethod
    def _slo_keys(cls, value: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        for name, limits in value.items():
            if not re.match(NAME_PATTERN, name):
                raise ValueError(f"SLO name {name!r} is not a name")
            check_limits(limits, f"SLO {name}")
        return value

    @field_validator("matrix")
    @classmethod
    def _axes(
        cls, value: dict[str, list[Any] | dict[str, dict[str, Any]]]
    ) -> dict[str, list[Any] | dict[str, dict[str, Any]]]:
        for axis, values in value.items():
            if isinstance(values, list):
                _field_path(axis)
                if not values:
                    raise ValueError(f"axis {axis!r} has no values")
            else:
                if not values:
                    raise ValueError(f"axis {axis!r} has no variants")
                for variant, overrides in values.items():
                    if not re.match(NAME_PATTERN, variant):
                        raise ValueError(f"variant {variant!r} of {axis!r} is not a name")
                    for path in overrides:
                        _field_path(path)
        return value

    @model_validator(mode="after")
    def _something_to_run(self) -> Campaign:
        if self.matrix and self.base is None:
            raise ValueError("a matrix needs a `base` recipe")
        if not self.points and self.base is None:
            raise ValueError("a campaign needs `points` or a `base` recipe")
        for rule in self.exclude:
            unknown = set(rule) - set(self.matrix)
            if unknown:
                raise ValueError(f"exclude names {sorted(unknown)}, which are not matrix axes")
        combinations = matrix_size(self.matrix) if self.base is not None else 0
        counted = combinations + len(self.points)
        if counted > MAX_POINTS:
            lengths = " x ".join(str(len(values)) for values in self.matrix.values())
            raise ValueError(
                f"{counted} points ({lengths} = {combinations} matrix combinations + "
                f"{len(self.points)} explicit), more than the {MAX_POINTS} a campaign may "
                "have: split it, or drop axis values"
            )
        if self.search is not None and self.search.slo not in self.slos:
            raise ValueError(
                f"search.slo {self.search.slo!r} is not one of the campaign's slos "
                f"({', '.join(self.slos) or 'none defined'})"
            )
        return self


def matrix_size(matrix: dict[str, list[Any] | dict[str, dict[str, Any]]]) -> int:
    """How many combinations `matrix` has (before `exclude`): the product of its axes'
    lengths, counted without making one."""
    return math.prod(len(values) for values in matrix.values())


# ---- the campaign folder's files (written and read by repro.campaign.folder) ----------------
PointStatus = Literal["pending", "running", "done", "failed"]


class PlannedPoint(BaseModel):
    """One point of a plan: what it runs, what it shares, and its predicted sweep."""

    name: str
    recipe: str = Field(description="the point's recipe file, relative to the campaign folder")
    labels: dict[str, str] = Field(default_factory=dict, description="matrix axis -> value")
    image: str
    model: str
    drafter: str | None = None
    gpus: int
    same_server_as: str | None = Field(
        default=None,
        description="an earlier point with the same image, argv and env: measured once",
    )
    baseline: str | None = Field(default=None, description="the same layout without the drafter")
    profile: str | None = Field(default=None, description="the simulator profile of the prediction")
    provenance: str | None = Field(default=None, description="the profile's provenance")
    caveats: list[str] = Field(
        default_factory=list,
        description="what the predicted numbers stand on: the calibration point beside the "
        "level at its concurrency and why they differ; 'ranking assumed' where extrapolated",
    )
    assumed: list[str] = Field(
        default_factory=list,
        description="the predicted numbers' assumed inputs, named in every verdict they feed",
    )
    predicted: list[Level] = Field(default_factory=list, description="predicted levels")
    prediction_error: str | None = None
    levels_s: float | None = Field(default=None, description="predicted levels' duration")
    warmups_s: float | None = Field(
        default=None, description="predicted warm-ups' duration (each level's, before it)"
    )
    accept_s: float | None = Field(default=None, description="predicted accept stage's duration")
    load_s: float | None = Field(
        default=None,
        description="the server's start: container and warm-up, the model's and the "
        "drafter's weights read at the assumed rate",
    )
    drafter_load_s: float | None = Field(
        default=None, description="of load_s, the drafter's weights (0: no drafter)"
    )
    image_s: float | None = Field(
        default=None, description="its image's pull, on the first point of each image (else 0)"
    )
    unknown_weights: list[str] = Field(
        default_factory=list,
        description="repositories of unknown size: their weights are not in load_s",
    )
    estimate_s: float | None = Field(
        default=None,
        description="predicted wall time: image + load + accept stage + warm-ups + levels",
    )


class EstimateParts(BaseModel):
    """What a plan's wall-time estimate adds up, over the points it estimates."""

    levels_s: float = 0.0
    warmups_s: float = 0.0
    accept_s: float = 0.0
    starts: int = Field(default=0, description="servers started (one per point measured)")
    starts_s: float = Field(default=0.0, description="their container starts and warm-ups")
    model_load_s: float = 0.0
    drafters: int = Field(default=0, description="servers that load a drafter")
    drafter_load_s: float = 0.0
    images: int = Field(default=0, description="images pulled (once each)")
    images_s: float = 0.0
    unknown_weights: list[str] = Field(
        default_factory=list, description="repositories of unknown size, not in the loads"
    )


class CampaignPlan(BaseModel):
    """`plan.json`: the campaign as given, its points in run order, and the estimate."""

    campaign: Campaign
    source: str = Field(description="the campaign file")
    points: list[PlannedPoint]
    estimate_s: float | None = Field(
        default=None, description="of the points predicted (the others: unestimated)"
    )
    gpu_hours: float | None = None
    usd: float | None = None
    estimate_parts: EstimateParts | None = Field(
        default=None, description="what estimate_s adds up"
    )
    unestimated: list[str] = Field(
        default_factory=list, description="points measured but not predicted: not in the estimate"
    )


class PointState(BaseModel):
    """One line of `index.json`: where a point is, and why it failed."""

    name: str
    status: PointStatus = "pending"
    run_dir: str | None = Field(
        default=None, description="its run folder, relative to the campaign's"
    )
    reason: str | None = None
    seconds: float | None = None


class CampaignIndex(BaseModel):
    """`index.json`: every point's state, written after each change."""

    campaign: str
    machine: str
    simulated: bool = False
    time_scale: float | None = None
    sim_profile: str | None = Field(
        default=None, description="the profile every simulated point runs on (None: its layout's)"
    )
    points: list[PointState]
