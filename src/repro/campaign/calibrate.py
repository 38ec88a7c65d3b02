"""`repro campaign calibrate FILE`: a short measured sweep on the machine in hand, a profile
fitted to it, and the campaign planned again on that profile.

The sweep is a campaign of its own (`<campaign>-calibration`, run like any other, resumable):
the campaign's first drafter point and its baseline, with SGLANG_SIMULATE_ACC_LEN forcing
each of a few acceptance lengths (`speculative.forced_acceptance`), at a few concurrencies,
short requests, no accept stage: minutes, not hours. `repro.report.verifyfit` fits its
levels' step cost and first-token time; the fitted profile is the one the campaign's
drafter point was predicted on, its machine's numbers (decode and prefill costs, the
drafter's step and verify costs) replaced by the fit's and labelled with the records they
came from, its acceptance kept (what a drafter accepts is the drafter's and the prompts', not
the machine's). Every point of the campaign is then predicted on it, each value with the
fit's held-out error as its band, and where the best of a concurrency is within that band of
another point, the two are marked "measure to decide".

Priced first: before anything starts, the sweep is planned and its estimate handed to the
caller (servers, weight loads, levels and time, by the plan's own assumptions), which may stop
there; past `CONFIRM_ABOVE_S` the CLI asks for `--yes`. Each forced length is a server of its
own (SGLANG_SIMULATE_ACC_LEN is read when the server starts), and on a machine each server
loads the model's weights again, so there the sweep forces one length (`FORCED_ON_A_MACHINE`:
the plain point and one drafter server, two loads): the fit's four step terms need no more;
only its acceptance term, which the profile has no field for, needs two lengths. Points whose
server is the same (image, argv and environment) are measured once, as in any campaign.

With `sim`, the sweep runs on the simulator with that profile standing in for the machine:
it checks the simulator only (that the fit recovers that profile's numbers), not a machine.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError
from rich.console import Console

from repro.campaign.decision import Decision
from repro.campaign.execute import run_points, start_campaign
from repro.campaign.folder import CAMPAIGNS_DIR, CampaignFolder
from repro.campaign.plan import LAUNCH_OVERHEAD_S, plan_campaign
from repro.campaign.points import load_campaign
from repro.errors import ReproError, short_repr
from repro.fsutil import write_atomic
from repro.report.records import load_runs
from repro.report.verifyfit import (
    HeldOut,
    error_band,
    fit,
    leave_one_out,
    points,
    record_folders,
)
from repro.schema.campaign import CampaignPlan, PlannedPoint
from repro.schema.forced import ForcedAcceptance
from repro.schema.recipe import Bench
from repro.schema.validation import expected_text
from repro.sim.profile import profile_path
from repro.units import human_seconds

CONCURRENCIES = (1, 4, 16)
FORCED = (1.0, 2.0, 4.0)  # forced acceptance lengths on the simulator (a server each)
FORCED_ON_A_MACHINE = (2.0,)  # on a machine: one drafter server (a weight load each)
CONFIRM_ABOVE_S = 600.0  # a sweep estimated longer than this starts only when confirmed
SIM_START_S = 15.0  # assumed: a simulator container's start and stop
INPUT_LEN, OUTPUT_LEN, PROMPTS = 256, 128, 16  # a short level
PROFILE_FILE = "profile.json"  # the fitted profile, in the calibration's campaign folder


@dataclass
class CalibrateOptions:
    source: Path  # the campaign file
    sim: str | None = None  # a profile standing in for the machine (None: this machine)
    time_scale: float = 1.0  # the simulator's, with sim
    campaigns_dir: Path = CAMPAIGNS_DIR
    concurrencies: tuple[int, ...] = CONCURRENCIES
    forced: tuple[float, ...] | None = None  # None: FORCED with sim, else FORCED_ON_A_MACHINE

    @property
    def forced_lengths(self) -> tuple[float, ...]:
        if self.forced is not None:
            return self.forced
        return FORCED if self.sim is not None else FORCED_ON_A_MACHINE


@dataclass(frozen=True)
class SweepEstimate:
    """What the sweep will cost, from its plan, before anything starts."""

    servers: list[str]  # the points that start a server (the others share one)
    levels: int
    seconds: float | None  # None: some point has no prediction (`unestimated`)
    weight_loads: int = 0  # on a machine: each server reads the model's weights again
    weights_s: float = 0.0
    parts: str = ""  # what the seconds add up
    unestimated: tuple[str, ...] = ()
    unknown_weights: tuple[str, ...] = ()  # repositories whose load is not counted
    sim: str | None = None  # the profile standing in for the machine

    @property
    def asks(self) -> bool:
        """Past the threshold, or not bounded (no estimate, weights of unknown size): it
        starts only when confirmed."""
        return self.seconds is None or self.seconds > CONFIRM_ABOVE_S or bool(self.unknown_weights)

    def why_asked(self) -> str:
        """Why it asks before it starts: its estimate, past the threshold, or none."""
        if self.seconds is None:
            return "has no estimate (a point has no prediction)"
        if self.unknown_weights and self.seconds <= CONFIRM_ABOVE_S:
            return (
                f"is estimated at {human_seconds(self.seconds)} here without loading "
                f"{', '.join(self.unknown_weights)} (size unknown), so it may take far longer"
            )
        return (
            f"is estimated at {human_seconds(self.seconds)} here, past "
            f"{human_seconds(CONFIRM_ABOVE_S)}"
        )

    def lines(self) -> list[str]:
        where = f"on the simulator (profile {self.sim})" if self.sim else "on this machine"
        total = "no estimate" if self.seconds is None else f"about {human_seconds(self.seconds)}"
        lines = [
            f"calibration sweep {where}: {len(self.servers)} servers "
            f"({', '.join(self.servers)}), {self.levels} levels, {total}",
        ]
        if self.sim is None:
            lines.append(
                f"  {self.weight_loads} weight loads, {human_seconds(self.weights_s)}; {self.parts}"
            )
        else:
            lines.append(f"  {self.parts}")
        if self.unestimated:
            lines.append(f"  not predicted (no profile): {', '.join(self.unestimated)}")
        if self.sim:
            lines.append(
                f"  this checks the simulator only: the fit recovers profile {self.sim}'s "
                "numbers, not a machine's"
            )
        return lines


def sweep_estimate(plan: CampaignPlan, options: CalibrateOptions) -> SweepEstimate:
    """The estimate of the sweep planned as `plan`, on the machine or the simulator."""
    started = [p for p in plan.points if p.same_server_as is None]
    levels = sum(len(p.predicted) or len(options.concurrencies) for p in started)
    unestimated = tuple(plan.unestimated)
    parts = plan.estimate_parts
    if options.sim is not None:
        levels_s = sum((p.levels_s or 0.0) + (p.warmups_s or 0.0) for p in started)
        seconds = len(started) * SIM_START_S + levels_s * options.time_scale
        why = (
            f"levels {human_seconds(levels_s * options.time_scale)} at time-scale "
            f"{options.time_scale:g}, {len(started)} starts at {SIM_START_S:g} s (assumed); "
            "no weights loaded"
        )
        return SweepEstimate(
            [p.name for p in started], levels, None if unestimated else seconds,
            parts=why, unestimated=unestimated, sim=options.sim,
        )  # fmt: skip
    if parts is None or unestimated:
        return SweepEstimate([p.name for p in started], levels, None, unestimated=unestimated)
    weights_s = parts.model_load_s + parts.drafter_load_s
    unknown = f"; not counted, size unknown: {', '.join(parts.unknown_weights)}"
    why = (
        f"image pulls {human_seconds(parts.images_s)}, starts "
        f"{human_seconds(parts.starts * LAUNCH_OVERHEAD_S)}, levels "
        f"{human_seconds(parts.levels_s + parts.warmups_s)}"
        f"{unknown if parts.unknown_weights else ''}"
    )
    return SweepEstimate(
        [p.name for p in started], levels, plan.estimate_s, weight_loads=parts.starts,
        weights_s=weights_s, parts=why, unknown_weights=tuple(parts.unknown_weights),
    )  # fmt: skip


@dataclass
class Calibration:
    folder: CampaignFolder  # the calibration sweep's campaign folder
    profile: Path  # the fitted profile
    held: list[HeldOut]  # the fit's leave-one-out check
    plan: CampaignPlan  # the campaign planned on the fitted profile
    estimate: SweepEstimate  # what the sweep was priced at before it started

    @property
    def band(self) -> tuple[float, float]:
        """The held-out |error| of the levels that measured the step cost: median, worst."""
        return error_band(self.held)


def _drafter_and_baseline(plan: CampaignPlan) -> tuple[PlannedPoint, PlannedPoint]:
    named = {p.name: p for p in plan.points}
    for point in plan.points:
        if point.drafter and point.baseline in named:
            return point, named[point.baseline]
    raise ReproError(
        f"{plan.source}: no point with a drafter and a baseline to calibrate on",
        hint="a calibration forces the acceptance of a drafter point and measures its layout "
        "without the drafter; add such a pair to the campaign",
    )


def _sweep_file(plan: CampaignPlan, recipes: Path, options: CalibrateOptions, out: Path) -> Path:
    drafter, baseline = _drafter_and_baseline(plan)
    name = plan.campaign.name or "campaign"
    quiet = {"accept": None}
    sweep = {
        "name": f"{name}-calibration",
        "description": f"Calibration of {name} on this machine: {baseline.name} and "
        f"{drafter.name} with forced acceptance (repro campaign calibrate).",
        "machine": plan.campaign.machine,
        "points": [
            {"recipe": str(recipes / f"{baseline.name}.yaml"), "name": "plain", "set": quiet},
            *(
                {
                    "recipe": str(recipes / f"{drafter.name}.yaml"),
                    "name": f"forced-{length:g}",
                    "set": {**quiet, "speculative.forced_acceptance": {"length": length}},
                }
                for length in options.forced_lengths
            ),
        ],
        "bench": {
            "concurrencies": list(options.concurrencies),
            "input_len": INPUT_LEN,
            "output_len": OUTPUT_LEN,
            "dataset": "random",
            "prompts_per_level": PROMPTS,
            "warmup": 1,
        },
    }
    path = out / f"{name}-calibration.yaml"
    write_atomic(path, yaml.safe_dump(sweep, sort_keys=False))
    return path


def _fitted_profile(folder: CampaignFolder, base: str) -> tuple[dict, list[HeldOut]]:
    """`base`'s profile with the machine's numbers fitted from the sweep's records."""
    runs = load_runs(list(record_folders([folder.path / "points"])))
    data = [p for run in runs for p in points(run)]
    result = fit(data)
    held = leave_one_out(data)
    profile = json.loads(profile_path(base).read_text(encoding="utf-8"))
    c = result.coefficients
    prompt = sum(p.prompt_tokens for p in data) / len(data) or 1.0
    profile["timing"].update(
        prefill_fixed_ms=result.prefill_ms,
        prefill_per_token_ms=result.prefill_per_req_ms / prompt,
        decode_fixed_ms=c["decode_fixed_ms"],
        decode_per_req_ms=c["decode_per_req_ms"],
        decode_per_1k_ctx_ms=0.0,
    )
    algorithms = {
        (run.server_info.speculative_algorithm or "").upper()
        for run in runs
        if run.server_info is not None
    }
    for algorithm, spec in profile.get("speculative", {}).items():
        if algorithm.upper() in algorithms:
            spec.update(draft_ms=c["draft_ms"], verify_ms_per_token=c["verify_ms_per_token"])
    median, worst = error_band(held)
    sources = sorted({p.source for p in data})
    odd = sum(1 for h in held if h.anomaly)
    left = f", {odd} paused or queued levels left out" if odd else ""
    profile.update(
        name=f"{folder.path.name}-fitted",
        provenance=f"calibrated: fitted on {len(data)} levels of {len(sources)} bench records "
        f"in {folder.path} (held-out output tok/s: median {median:.1%}, "
        f"worst {worst:.1%}{left}); acceptance and drafters from {base}",
        measured=[],
        assumed=[  # the first token is fitted now: the base's prefill is no longer assumed
            *(line for line in profile.get("assumed", []) if "prefill" not in line.lower()),
            f"acceptance from {base}",
        ],
        fit={"coefficients": c, "prefill_ms": result.prefill_ms, "sources": sources},
    )
    return profile, held


def check_sweep(options: CalibrateOptions) -> None:
    """The sweep's concurrencies and forced lengths held to what its campaign file and
    recipes accept, before anything is planned: refused, they name the option that gave them,
    not the sweep's campaign file (a temporary one, gone when the user reads the error)."""
    shown = short_repr(",".join(str(c) for c in options.concurrencies), 40)
    try:
        Bench.model_validate({"concurrencies": list(options.concurrencies)})
    except ValidationError as err:
        raise ReproError(
            f"--concurrencies {shown}: {expected_text(err.errors()[0])}",
            hint="e.g. --concurrencies 1,4,16",
        ) from None
    forced = options.forced or ()
    for length in forced:
        try:
            ForcedAcceptance.model_validate({"length": length})
        except ValidationError as err:
            raise ReproError(
                f"--forced {length:g}: {expected_text(err.errors()[0])}",
                hint="e.g. --forced 1,2,4",
            ) from None
    if len(set(forced)) != len(forced):
        raise ReproError(
            f"--forced {','.join(f'{f:g}' for f in forced)}: each length once",
            hint="e.g. --forced 1,2,4",
        )


def calibrate(
    options: CalibrateOptions, console: Console, confirm: Callable[[SweepEstimate], None]
) -> Calibration:
    """Run the sweep (see the module docstring), fit the profile, plan the campaign on it;
    `confirm` is given the sweep's estimate before anything starts (it raises to stop)."""
    load_campaign(options.source)  # a bad file fails before anything runs
    check_sweep(options)
    with tempfile.TemporaryDirectory(prefix="repro-calibrate-") as scratch:
        recipes = Path(scratch) / "recipes"
        original = plan_campaign(options.source, recipes, predict=False)
        sweep = _sweep_file(original, recipes, options, Path(scratch))
        estimate = sweep_estimate(plan_campaign(sweep), options)
        confirm(estimate)
        folder, plan, index = start_campaign(
            sweep, options.campaigns_dir, console, options.sim is not None,
            options.time_scale, options.sim,
        )  # fmt: skip
    run_points(folder, plan, index, console)
    forced = next(p for p in plan.points if p.name.startswith("forced-"))
    if forced.profile is None:
        raise ReproError(
            f"{forced.name}: no simulator profile of its layout to take the acceptance from "
            f"({forced.prediction_error})"
        )
    profile, held = _fitted_profile(folder, forced.profile)
    path = folder.path / PROFILE_FILE
    write_atomic(path, json.dumps(profile, indent=2) + "\n")
    replanned = plan_campaign(options.source, profile=str(path))
    return Calibration(folder, path, held, replanned, estimate)


def measure_to_decide(decision: Decision, band: float) -> list[tuple[int, list[str]]]:
    """Per concurrency, the points within `band` of the best there (the best included):
    their order is inside the fit's error, so only measuring them decides it."""
    close = []
    for c, best in decision.best.items():
        top = decision.table[best].get(c) or 0.0
        near = [
            name
            for name, row in decision.table.items()
            if (v := row.get(c)) is not None and v >= top * (1.0 - band)
        ]
        if len(near) > 1:
            close.append((c, near))
    return close
