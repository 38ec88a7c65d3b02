"""How closely does a trace replay keep the trace's times (issue 42: 5 ms p99 at 1x)?

Replays the shipped Mooncake trace (`--trace demo`, 48 requests over about 8 s, bursts of
requests a few ms apart) against the simulator on this host, `--runs` times at each speed-up,
and prints per replay the send lag (actual send time - the trace's time, from the record's
`start_s` and `offered_s`) at p50 / p99 / max and the achieved vs offered rate. Run it on a
quiet host: tests/bench/test_trace.py asserts only a loose bound, since tests share the host.

    PYTHONPATH=src .venv/bin/python benchmarks/trace_replay.py [--speedups 1,4] [--runs 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from repro.bench import BenchOptions, BenchTarget, run_bench
from repro.recipe import load_recipe
from repro.runfolder import RunFolder
from tests.bench.simserver import DFLASH, SimServer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--speedups", default="1,4")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    speedups = [float(s) for s in args.speedups.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        sim = SimServer(Path(tmp) / "sim.log", *DFLASH, REPRO_SIM_TIME_SCALE="0.3")
        try:
            opts = BenchOptions(
                url=sim.url, trace="demo", trace_speedups=speedups, runs_dir=Path(tmp)
            )
            print(f"{'speed-up':>8} {'run':>3} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} "
                  f"{'offered/s':>9} {'sent/s':>7}")  # fmt: skip
            for run in range(args.runs):
                result = run_bench(BenchTarget.from_recipe(load_recipe("demo")), opts)
                for level in result.levels:
                    rows = RunFolder(result.run_dir).read_requests(level.load, level.repeat)
                    lag = np.array([r.start_s - (r.offered_s or 0.0) for r in rows]) * 1000
                    p50, p99 = np.percentile(np.abs(lag), [50, 99])
                    arrival = level.arrival
                    assert arrival is not None
                    print(
                        f"{level.load.value:>7g}x {run:>3} {p50:7.2f} {p99:7.2f} "
                        f"{np.abs(lag).max():7.2f} {arrival.offered_rate or 0:9.2f} "
                        f"{arrival.achieved_rate or 0:7.2f}"
                    )
        finally:
            sim.stop()


if __name__ == "__main__":
    main()
