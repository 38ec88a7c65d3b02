"""How close is `repro campaign plan`'s prediction to a real-time simulator run of the same
point, and what does a campaign cost beyond its server loads and measured levels (issue 39)?

Writes a one-point campaign (a shipped recipe with a reduced bench plan), runs it with
`repro campaign run --sim --time-scale 1` (the simulator image under Docker Compose, the
bench client over HTTP, every duration slept), then prints per level the predicted output
tok/s and mean TTFT (plan.json, the simulator's model in virtual time) against the measured
ones (the point's summary.json) with their ratio; then the campaign's wall time split into
the measured levels, their warm-ups (the campaign file's `warmup` requests before each level),
the acceptance runs of drafter points, the servers' starts (the launch stage), and the rest:
what repro itself adds (plan, doctor, lock, image, report, stop), as a share of the wall time.

    .venv/bin/python benchmarks/campaign_prediction.py [--recipe kimi26-tp8]
        [--concurrencies 1,8,64] [--output-len 64] [--prompts 64]
    .venv/bin/python benchmarks/campaign_prediction.py --folder runs/campaigns/<folder>
        [--plan PLAN.json]   (a campaign already run with --sim: every point, its wall time as
        its points' own; --plan: today's prediction, `repro campaign plan FILE --json`)

Run it on an otherwise idle machine: at time-scale 1 the simulator must keep its clock.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from repro.runfolder import RunFolder

REPO = Path(__file__).resolve().parents[1]
REPRO = str(Path(sys.executable).parent / "repro")
RUN_DEADLINE_S = 3 * 3600  # the longest simulated campaign a benchmark runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="kimi26-tp8")
    parser.add_argument("--concurrencies", default="1,8,64")
    parser.add_argument("--output-len", type=int, default=64)
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument(
        "--folder", type=Path, help="report on this finished campaign folder instead of running one"
    )
    parser.add_argument(
        "--plan", type=Path, help="with --folder: compare with this plan (campaign plan --json)"
    )
    args = parser.parse_args()
    if args.folder is not None:
        report(args.folder, plan_file=args.plan)
        return
    with tempfile.TemporaryDirectory() as tmp:
        campaign = Path(tmp) / "predict-check.yaml"
        campaign.write_text(
            json.dumps(
                {
                    "machine": "this-host",
                    "points": [{"recipe": args.recipe}],
                    "bench": {
                        "concurrencies": [int(c) for c in args.concurrencies.split(",")],
                        "input_len": 256,
                        "output_len": args.output_len,
                        "dataset": "chat",
                        "prompts_per_level": args.prompts,
                        "warmup": 2,
                    },
                }
            )
        )
        folder, wall = run_on_simulator(campaign, 1.0, Path(tmp) / "c")
        report(folder, wall)


def run_on_simulator(campaign: Path, time_scale: float, campaigns_dir: Path) -> tuple[Path, float]:
    """`repro campaign run CAMPAIGN --sim` into `campaigns_dir` (empty): its folder, and the
    wall time around it."""
    command = [REPRO, "campaign", "run", str(campaign), "--sim", "--time-scale", f"{time_scale:g}"]
    print("$", " ".join(command[1:]), "--campaigns-dir TMP")
    started = time.monotonic()
    run = subprocess.run(
        [*command, "--campaigns-dir", str(campaigns_dir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=RUN_DEADLINE_S,
    )
    wall = time.monotonic() - started
    if run.returncode != 0:
        raise SystemExit(f"the campaign failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    [folder] = list(campaigns_dir.iterdir())
    return folder, wall


def report(folder: Path, wall: float | None = None, plan_file: Path | None = None) -> None:
    """Per point: predicted against measured levels, and its wall time split; then the
    campaign's (`wall` measured around it, else the sum of its points' own times). The
    prediction is the folder's own plan, or `plan_file` (`repro campaign plan --json`)."""
    plan = json.loads((plan_file or folder / "plan.json").read_text())
    states = {s["name"]: s for s in json.loads((folder / "index.json").read_text())["points"]}
    total_levels = total_launch = total_points = total_bench = total_accept = 0.0
    for point in plan["points"]:
        state = states[point["name"]]
        if state["status"] != "done" or not state["run_dir"]:
            print(f"{point['name']}: {state['status']} ({state.get('reason') or 'not run'})")
            continue
        run_dir = folder / state["run_dir"]
        measured = json.loads(RunFolder(run_dir).bench.summary_file.read_text())["levels"]
        predicted = {lv["max_concurrency"]: lv for lv in point["predicted"]}
        print(f"{point['name']} on profile {point['profile']} ({point['provenance'][:40]}...)")
        header = ("c", 4), ("predicted", 10), ("measured", 10), ("ratio", 6), ("TTFT pred", 10)
        print(" ".join(f"{name:>{width}}" for name, width in header), f"{'meas':>9}")
        for level in measured:
            guess = predicted[level["max_concurrency"]]
            print(
                f"{level['max_concurrency']:>4} {guess['output_throughput']:>10.1f} "
                f"{level['output_throughput']:>10.1f} "
                f"{guess['output_throughput'] / level['output_throughput']:>6.3f} "
                f"{guess['mean_ttft_ms']:>9.1f}ms {level['mean_ttft_ms']:>7.1f}ms"
                + ("" if level.get("valid", True) else "  (level invalid)")
            )
        stages = json.loads(RunFolder(run_dir).stages_file.read_text())["stages"]
        seconds = {s["name"]: s["seconds"] or 0.0 for s in stages}
        total_launch += seconds.get("launch", 0.0)
        total_bench += seconds.get("bench", 0.0)
        total_accept += seconds.get("accept", 0.0)
        total_levels += sum(lv["duration"] for lv in measured)
        total_points += state["seconds"] or 0.0
    wall = wall if wall is not None else total_points
    if wall <= 0:
        print("no point finished: no wall time to split")
        return
    warmups = total_bench - total_levels  # the bench stage beyond its measured levels
    rest = wall - total_launch - total_bench - total_accept
    print(
        f"wall {wall:.1f} s = levels {total_levels:.1f} s + warm-ups {warmups:.1f} s "
        f"+ acceptance {total_accept:.1f} s + server starts {total_launch:.1f} s + the rest "
        f"{rest:.1f} s ({100 * rest / wall:.1f}% of the wall time: plan, doctor, lock, image, "
        "report, stop)"
    )


if __name__ == "__main__":
    main()
