"""Does the plan's wall time hold on a run (issue 63: goal within 15 %)? A seed campaign,
trimmed, planned and run on the simulator, the plan's estimate set against the wall clock.

Takes a shipped campaign (default the DDTree budgets), keeps some of its points and trims its
sweep (concurrencies, prompts per level, lengths, warm-up) and the accept stage of its drafter
points, then runs it with `repro campaign run FILE --sim --time-scale T` (the simulator image
under Docker Compose, every simulated duration slept at the time scale). The plan is the one
that run writes (`plan.json`); its wall time on the simulator is what the run's ETA says
before the first point (`repro.campaign.execute.eta_left`: per point its predicted accept
stage and levels at the time scale plus a simulated point's start, doctor to stop). Printed:
the plan's wall time, the measured one and their ratio, then per point and in all the
breakdown of both: levels (the measured levels' own durations), their warm-ups (the rest of
the bench stage), accept stages, server starts (the launch stage) and the rest (plan, doctor,
lock, image check, report, stop, and the campaign's own planning and report).

    .venv/bin/python benchmarks/plan_vs_run.py [--campaign campaigns/qwen36-ddtree-budgets.yaml]
        [--points 0,1,2] [--concurrencies 1,4] [--prompts 8] [--input-len 256]
        [--output-len 128] [--warmup 2] [--accept-prompts 4] [--time-scale 1]

Run it on an otherwise idle machine (`uptime`): at time scale 1 the simulator must keep its
clock, and a host that falls behind stretches the run, not the plan.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from campaign_prediction import run_on_simulator  # benchmarks/, beside this script

from repro.campaign.execute import SIM_START_S, eta_left
from repro.runfolder import RunFolder
from repro.schema.campaign import CampaignIndex, CampaignPlan, PlannedPoint

REPO = Path(__file__).resolve().parents[1]
PARTS = ("levels", "warm-ups", "accept", "start+rest", "campaign")


@dataclass
class Split:
    """Seconds per part of a wall time (PARTS)."""

    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PARTS, 0.0))
    starts_s: float = 0.0  # of start+rest, the launch stage (measured)

    @property
    def total(self) -> float:
        return sum(self.seconds.values())

    def add(self, other: Split) -> None:
        for part, value in other.seconds.items():
            self.seconds[part] += value
        self.starts_s += other.starts_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--campaign", type=Path, default=REPO / "campaigns/qwen36-ddtree-budgets.yaml"
    )
    parser.add_argument("--points", default="0,1,2", help="indices of the points kept")
    parser.add_argument("--concurrencies", default="1,4")
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--input-len", type=int, default=256)
    parser.add_argument("--output-len", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--accept-prompts", type=int, default=4)
    parser.add_argument("--time-scale", type=float, default=1.0)
    args = parser.parse_args()
    campaign = trimmed(args)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{args.campaign.stem}-trimmed.yaml"
        path.write_text(yaml.safe_dump(campaign, sort_keys=False))
        print("trimmed:", json.dumps({k: campaign[k] for k in ("points", "bench", "accept")}))
        folder, wall = run_on_simulator(path, args.time_scale, Path(tmp) / "c")
        report(folder, wall)


def trimmed(args: argparse.Namespace) -> dict:
    """The campaign file's points at `--points`, its sweep and accept stage trimmed."""
    campaign = yaml.safe_load(args.campaign.read_text())
    keep = [int(i) for i in args.points.split(",")]
    campaign["points"] = [campaign["points"][i] for i in keep]
    campaign["bench"] = {
        **campaign.get("bench", {}),
        "concurrencies": [int(c) for c in args.concurrencies.split(",")],
        "prompts_per_level": args.prompts,
        "input_len": args.input_len,
        "output_len": args.output_len,
        "warmup": args.warmup,
    }
    campaign["bench"].pop("prompts_per_concurrency", None)
    campaign["accept"] = {
        "prompt_sets": ["chat"],
        "prompts": args.accept_prompts,
        "max_new_tokens": args.output_len,
    }
    campaign.pop("search", None)
    return campaign


def planned(point: PlannedPoint, index: CampaignIndex) -> Split:
    """The plan's seconds for one simulated point, split as eta_left adds them."""
    scale = index.time_scale or 0.0
    split = Split()
    split.seconds["levels"] = (point.levels_s or 0.0) * scale
    split.seconds["warm-ups"] = (point.warmups_s or 0.0) * scale
    split.seconds["accept"] = (point.accept_s or 0.0) * scale
    split.seconds["start+rest"] = SIM_START_S  # a simulated point's start, doctor to stop
    assert abs(split.total - eta_left(point, index, set())) < 1e-6
    return split


def measured(run_dir: Path, seconds: float) -> Split:
    """The run's seconds for one point, from its stages and its levels."""
    stages = RunFolder(run_dir).read_stages()
    by_stage = {s.name: s.seconds or 0.0 for s in (stages.stages if stages else [])}
    summary = RunFolder(run_dir).bench.read_summary()
    split = Split()
    split.seconds["levels"] = sum(level.duration for level in summary.levels)
    split.seconds["warm-ups"] = by_stage.get("bench", 0.0) - split.seconds["levels"]
    split.seconds["accept"] = by_stage.get("accept", 0.0)
    split.seconds["start+rest"] = seconds - split.total
    split.starts_s = by_stage.get("launch", 0.0)
    return split


def report(folder: Path, wall: float) -> None:
    plan = CampaignPlan.model_validate_json((folder / "plan.json").read_text())
    index = CampaignIndex.model_validate_json((folder / "index.json").read_text())
    states = {s.name: s for s in index.points}
    plan_total, run_total = Split(), Split()
    rows = []
    for point in plan.points:
        state = states[point.name]
        if point.same_server_as is not None:
            continue
        if state.status != "done" or state.run_dir is None:
            raise SystemExit(f"{point.name}: {state.status} ({state.reason})")
        ours, theirs = (
            planned(point, index),
            measured(folder / state.run_dir, state.seconds or 0.0),
        )
        plan_total.add(ours)
        run_total.add(theirs)
        rows.append((point.name, ours, theirs))
    # what the campaign spent outside its points: its plan (the predictions) and report
    run_total.seconds["campaign"] = wall - run_total.total
    print(
        f"plan's wall time {plan_total.total:.1f} s, measured {wall:.1f} s: "
        f"ratio {plan_total.total / wall:.3f} (plan / run)"
    )
    print(f"{'part':<12} {'plan s':>8} {'run s':>8} {'plan/run':>9}")
    for part in PARTS:
        planned_s, run_s = plan_total.seconds[part], run_total.seconds[part]
        ratio = f"{planned_s / run_s:>9.3f}" if run_s > 0 else f"{'-':>9}"
        print(f"{part:<12} {planned_s:>8.1f} {run_s:>8.1f} {ratio}")
    print(
        f"(start+rest: a point's doctor, lock, image check, launch, report and stop; the "
        f"launch stages took {run_total.starts_s:.1f} s of it; campaign: its plan and "
        "report, outside the points)"
    )
    print(f"{'point':<40} {'plan s':>8} {'run s':>8} {'plan/run':>9}")
    for name, ours, theirs in rows:
        print(
            f"{name:<40} {ours.total:>8.1f} {theirs.total:>8.1f} {ours.total / theirs.total:>9.3f}"
        )


if __name__ == "__main__":
    main()
