"""`repro campaign plan`: every point rendered and checked before any GPU time is spent,
ordered, de-duplicated, paired with its baseline, predicted and priced.

- Checked: each point goes through `repro recipe check`'s rules; one invalid point refuses
  the whole campaign, every problem of every point listed.
- Shared servers: points whose image, server argv and environment are the same (a matrix
  that crosses "no drafter" with draft-token counts, say) are measured once.
- Baselines: a drafter point's baseline is the point of the same layout (model, parallelism,
  topology, server flags but the running-request cap, environment) without a drafter; the
  speculation crossover compares the two.
- Order: grouped by image, then model and drafter, so a machine pulls and loads each once.
- Prediction: the simulator's model in virtual time (repro.campaign.predict); a point no
  profile covers is planned without one, and says why.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from repro.campaign.points import Point, expand, load_campaign, write_point
from repro.campaign.predict import predict_point
from repro.errors import RecipeError, ReproError
from repro.lock import load_locked
from repro.recipe.hardware import weights_gb
from repro.recipe.render import render_command, render_env
from repro.recipe.rules import check_recipe
from repro.schema.campaign import Campaign, CampaignPlan, EstimateParts, PlannedPoint
from repro.schema.lock import Locked
from repro.units import human_seconds

# Assumptions of the wall-time estimate, beyond the predicted levels and accept stages.
LAUNCH_OVERHEAD_S = 90.0  # container start, CUDA graph capture, warm-up
WEIGHTS_READ_GB_PER_S = 1.0  # loading weights (the model's and the drafter's) from the Hub cache
IMAGE_PULL_S = 300.0  # an image pulled (or built on its pulled base), once, before its first point
MAX_PROBLEMS_SHOWN = 20


def plan_campaign(
    path: Path,
    recipes_folder: Path | None = None,
    *,
    predict: bool = True,
    progress: Callable[[str], None] | None = None,
    profile: str | None = None,
) -> CampaignPlan:
    """The plan of the campaign file `path`; point recipes are written to `recipes_folder`
    (a scratch folder, removed after, when None); every point predicted on `profile` (a name
    or a JSON file) when given, else on the profile of its layout."""
    campaign = load_campaign(path)
    points = expand(campaign, named=path)
    scratch = None
    if recipes_folder is None:
        scratch = Path(tempfile.mkdtemp(prefix="repro-campaign-"))
        recipes_folder = scratch / "recipes"
    try:
        return _plan(campaign, path, points, recipes_folder, predict, progress, profile)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def _plan(
    campaign: Campaign,
    path: Path,
    points: list[Point],
    folder: Path,
    predict: bool,
    progress: Callable[[str], None] | None,
    profile: str | None = None,
) -> CampaignPlan:
    planned: list[PlannedPoint] = []
    problems: list[str] = []
    servers: dict[str, str] = {}
    layouts: dict[str, str] = {}
    lockeds: dict[str, Locked] = {}
    for point in points:
        file = write_point(point, campaign, folder)
        try:
            locked = load_locked(file)
        except RecipeError as err:
            problems.extend(f"{point.name}: {line}" for line in err.problems)
            continue
        errors = [f for f in check_recipe(locked) if f.severity == "error"]
        problems.extend(f"{point.name}: {f}" for f in errors)
        if errors or locked.catalog is None:
            continue
        recipe = locked.recipe
        server = _server_key(locked)
        entry = PlannedPoint(
            name=point.name,
            recipe=str(file.relative_to(folder.parent)),
            labels=point.labels,
            image=recipe.image,
            model=recipe.model.repo,
            drafter=recipe.drafter.repo if recipe.drafter else None,
            gpus=recipe.topology.gpus,
            same_server_as=servers.setdefault(server, point.name),
        )
        if entry.same_server_as == point.name:
            entry.same_server_as = None
        if recipe.drafter is None:
            layouts.setdefault(_layout_key(locked), point.name)
        planned.append(entry)
        lockeds[point.name] = locked
    if problems:
        shown = problems[:MAX_PROBLEMS_SHOWN]
        if len(problems) > len(shown):
            shown.append(f"... and {len(problems) - len(shown)} more")
        raise RecipeError.from_problems(
            shown, hint="fix the campaign or its recipes; `repro recipe check` shows one recipe"
        )
    for entry in planned:
        if entry.drafter is not None:
            entry.baseline = layouts.get(_layout_key(lockeds[entry.name]))
    planned.sort(key=lambda p: (p.image, p.model, p.drafter or ""))
    if predict:
        scratch = folder.parent / "predictions"
        for index, entry in enumerate(planned, 1):
            if entry.same_server_as is None:
                if progress:
                    progress(f"predicting {entry.name} ({index}/{len(planned)})")
                file = folder.parent / entry.recipe
                _predict(entry, file, scratch / entry.name, lockeds, profile)
        shutil.rmtree(scratch, ignore_errors=True)
    return _priced(CampaignPlan(campaign=campaign, source=str(path), points=planned), lockeds)


def _predict(
    entry: PlannedPoint,
    file: Path,
    scratch: Path,
    lockeds: dict[str, Locked],
    profile: str | None,
) -> None:
    try:
        prediction = predict_point(file, scratch, profile)
    except ReproError as err:
        entry.prediction_error = err.message.splitlines()[0]
        return
    entry.profile, entry.provenance = prediction.profile, prediction.provenance
    entry.caveats, entry.assumed = prediction.caveats, prediction.assumed
    entry.predicted = prediction.levels
    entry.levels_s = sum(level.duration for level in prediction.levels)
    entry.warmups_s = prediction.warmups_s
    entry.accept_s = prediction.accept_s
    recipe = lockeds[entry.name].recipe
    model_gb = weights_gb(recipe.model.repo, recipe.model.weights_gb)
    drafter_gb = 0.0
    if recipe.drafter is not None:
        drafter_gb = weights_gb(recipe.drafter.repo, recipe.drafter.weights_gb) or 0.0
        if not drafter_gb:
            entry.unknown_weights.append(recipe.drafter.repo)
    if model_gb is None:
        entry.unknown_weights.insert(0, recipe.model.repo)
    entry.drafter_load_s = drafter_gb / WEIGHTS_READ_GB_PER_S
    entry.load_s = LAUNCH_OVERHEAD_S + (model_gb or 0.0) / WEIGHTS_READ_GB_PER_S
    entry.load_s += entry.drafter_load_s


def _priced(plan: CampaignPlan, lockeds: dict[str, Locked]) -> CampaignPlan:
    """The estimate of the points predicted (each image pulled once, on its first point);
    those that are not are named in `unestimated`."""
    measured = [p for p in plan.points if p.same_server_as is None]
    plan.unestimated = [p.name for p in measured if p.levels_s is None]
    measured = [p for p in measured if p.levels_s is not None]
    if not measured:
        return plan
    parts = EstimateParts()
    pulled: set[str] = set()
    for point in measured:
        point.image_s = 0.0 if point.image in pulled else IMAGE_PULL_S
        pulled.add(point.image)
        load_s, accept_s = point.load_s or 0.0, point.accept_s or 0.0
        levels_s, warmups_s = point.levels_s or 0.0, point.warmups_s or 0.0
        point.estimate_s = point.image_s + load_s + accept_s + warmups_s + levels_s
        parts.levels_s += levels_s
        parts.warmups_s += warmups_s
        parts.accept_s += accept_s
        parts.starts += 1
        parts.starts_s += LAUNCH_OVERHEAD_S
        parts.drafters += bool(point.drafter_load_s)
        parts.drafter_load_s += point.drafter_load_s or 0.0
        parts.model_load_s += load_s - LAUNCH_OVERHEAD_S - (point.drafter_load_s or 0.0)
        parts.images_s += point.image_s
        parts.unknown_weights.extend(point.unknown_weights)
    parts.images = len(pulled)
    parts.unknown_weights = list(dict.fromkeys(parts.unknown_weights))
    plan.estimate_parts = parts
    plan.estimate_s = sum(p.estimate_s or 0.0 for p in measured)
    plan.gpu_hours = sum((p.estimate_s or 0.0) * p.gpus for p in measured) / 3600.0
    if plan.campaign.gpu_hour_usd is not None:
        plan.usd = plan.gpu_hours * plan.campaign.gpu_hour_usd
    return plan


def _server_key(locked: Locked) -> str:
    """What makes two points one server: image, argv and environment."""
    assert locked.catalog is not None
    recipe = locked.recipe
    command = render_command(recipe, locked.catalog)
    return json.dumps([recipe.image, command, render_env(recipe)], sort_keys=True)


def _layout_key(locked: Locked) -> str:
    """What a drafter point shares with its baseline (all but drafting and its batch cap)."""
    recipe = locked.recipe
    server = recipe.server.model_dump(mode="json", exclude={"max_running_requests"})
    return json.dumps(
        [
            recipe.model.model_dump(mode="json"),
            recipe.parallelism.model_dump(mode="json"),
            recipe.topology.model_dump(mode="json"),
            server,
            recipe.env,
        ],
        sort_keys=True,
    )


def estimate_breakdown(parts: EstimateParts) -> list[str]:
    """What the estimate adds up, a line each: the predicted levels and accept stages, the
    assumed server starts and image pulls, the weights read (and those of unknown size)."""

    def count(n: int, what: str) -> str:
        return f"{n} {what}{'s' * (n != 1)}"

    lines = [
        f"predicted: levels {human_seconds(parts.levels_s)}, their warm-ups "
        f"{human_seconds(parts.warmups_s)}, accept stages {human_seconds(parts.accept_s)}",
        f"assumed: {count(parts.starts, 'server start')} {human_seconds(parts.starts_s)}, "
        f"{count(parts.images, 'image pull')} {human_seconds(parts.images_s)}",
        f"weights at {WEIGHTS_READ_GB_PER_S:g} GB/s: the models' "
        f"{human_seconds(parts.model_load_s)} ({count(parts.starts, 'load')}), the "
        f"drafters' {human_seconds(parts.drafter_load_s)} ({count(parts.drafters, 'load')})",
    ]
    if parts.unknown_weights:
        lines.append(f"not counted, size unknown: {', '.join(parts.unknown_weights)}")
    return lines
