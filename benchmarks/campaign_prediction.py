"""How close is `repro campaign plan`'s prediction to a real-time simulator run of the same
point, and what does a campaign cost beyond its server loads and measured levels (issue 39)?

Writes a one-point campaign (a shipped recipe with a reduced bench plan), runs it with
`repro campaign run --sim --time-scale 1` (the simulator image under Docker Compose, the
bench client over HTTP, every duration slept), then prints per level the predicted output
tok/s and mean TTFT (plan.json, the simulator's model in virtual time) against the measured
ones (the point's summary.json) with their ratio; then the campaign's wall time split into
the measured levels, the server's start (the launch stage), and the rest (plan, doctor, lock,
image, accept, report, stop, warm-ups), as a share of the wall time.

    .venv/bin/python benchmarks/campaign_prediction.py [--recipe kimi26-tp8]
        [--concurrencies 1,8,64] [--output-len 64] [--prompts 64]

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="kimi26-tp8")
    parser.add_argument("--concurrencies", default="1,8,64")
    parser.add_argument("--output-len", type=int, default=64)
    parser.add_argument("--prompts", type=int, default=64)
    args = parser.parse_args()
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
        started = time.monotonic()
        command = [REPRO, "campaign", "run", str(campaign), "--sim", "--time-scale", "1"]
        run = subprocess.run(
            [*command, "--campaigns-dir", str(Path(tmp) / "c")],
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        wall = time.monotonic() - started
        if run.returncode != 0:
            raise SystemExit(f"the campaign failed:\n{run.stderr[-3000:]}")
        [folder] = list((Path(tmp) / "c").iterdir())
        report(folder, wall)


def report(folder: Path, wall: float) -> None:
    plan = json.loads((folder / "plan.json").read_text())
    index = json.loads((folder / "index.json").read_text())
    [point], [state] = plan["points"], index["points"]
    run_dir = folder / state["run_dir"]
    measured = json.loads(RunFolder(run_dir).bench.summary_file.read_text())["levels"]
    predicted = {lv["max_concurrency"]: lv for lv in point["predicted"]}
    print(f"{point['name']} on profile {point['profile']} ({point['provenance'][:60]}...)")
    print(f"{'c':>4} {'predicted':>10} {'measured':>10} {'ratio':>6} {'TTFT pred':>10} {'meas':>8}")
    for level in measured:
        c = level["max_concurrency"]
        guess = predicted[c]
        print(
            f"{c:>4} {guess['output_throughput']:>10.1f} {level['output_throughput']:>10.1f} "
            f"{guess['output_throughput'] / level['output_throughput']:>6.3f} "
            f"{guess['mean_ttft_ms']:>9.1f}ms {level['mean_ttft_ms']:>6.1f}ms"
            + ("" if level.get("valid", True) else "  (level invalid)")
        )
    stages = json.loads(RunFolder(run_dir).stages_file.read_text())["stages"]
    launch = sum(s["seconds"] or 0 for s in stages if s["name"] == "launch")
    levels = sum(lv["duration"] for lv in measured)
    rest = wall - launch - levels
    print(
        f"wall {wall:.1f} s = levels {levels:.1f} s + server start {launch:.1f} s + "
        f"the rest {rest:.1f} s ({100 * rest / wall:.1f}% of the wall time)"
    )


if __name__ == "__main__":
    main()
