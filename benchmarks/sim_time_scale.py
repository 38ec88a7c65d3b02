"""Does a simulated comparison give the same speedups at a shorter --time-scale (issue 29)?

For each time-scale, runs the same reduced sweep of the EP4 baseline and EP4 + DFlash
(profile kimi26-ep4-rtx6000, chat prompts) against the simulator on this host, and prints per
level the two throughputs, the speedup, and whether the simulator kept its clock (its lag,
`sim_clock.behind_pct`, and the level's verdict). A scale the host keeps gives the speedups
of time-scale 1 within noise; a scale it cannot keep makes its levels invalid.

    .venv/bin/python benchmarks/sim_time_scale.py [--scales 1,0.25,0.05,0.01]
        [--concurrencies 1,8,64] [--output-len 64]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from repro.bench import BenchOptions, BenchTarget, run_bench
from repro.recipe import load_recipe

REPO = Path(__file__).resolve().parents[1]
SHIM = REPO / "src" / "repro" / "sim" / "shim"
DFLASH = [
    "--speculative-algorithm", "DFLASH",
    "--speculative-draft-model-path", "z-lab/Kimi-K2.6-DFlash",
    "--speculative-num-draft-tokens", "16", "--max-running-requests", "256",
]  # fmt: skip


def start(scale: str, extra: list[str], port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPRO_SIM_")}
    env.update(
        PYTHONPATH=f"{SHIM}{os.pathsep}{REPO / 'src'}",
        REPRO_SIM_PROFILE="kimi26-ep4-rtx6000",
        REPRO_SIM_TIME_SCALE=scale,
        REPRO_SIM_LOAD_SECONDS="0",
        REPRO_SIM_SEED="0",
    )
    argv = [sys.executable, "-m", "sglang.launch_server", "--model-path", "moonshotai/Kimi-K2.6"]
    argv += ["--tp-size", "8", "--ep-size", "4", "--enable-metrics", *extra]
    argv += ["--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(argv, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health_generate", timeout=5):
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"the simulator did not start: {log}")


def sweep(scale: str, extra: list[str], recipe: str, args: argparse.Namespace, tmp: Path) -> dict:
    port = 31000 + os.getpid() % 1000
    proc = start(scale, extra, port, tmp / f"{recipe}-{scale}.log")
    try:
        concurrencies = [int(c) for c in args.concurrencies.split(",")]
        levels = {}
        for c in concurrencies:  # prompts per level: two rounds of the concurrency, >= 8
            opts = BenchOptions(
                url=f"http://127.0.0.1:{port}", concurrencies=[c], input_len=256,
                output_len=args.output_len, prompts=max(8, 2 * c), runs_dir=tmp / "runs",
                endpoint="chat", dataset="chat",
            )  # fmt: skip
            (levels[c],) = run_bench(BenchTarget.from_recipe(load_recipe(recipe)), opts).levels
        return levels
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default="1,0.25,0.05,0.01")
    parser.add_argument("--concurrencies", default="1,8,64")
    parser.add_argument("--output-len", type=int, default=64)
    args = parser.parse_args()
    print(f"{'scale':>6} {'c':>4} {'ep4 tok/s':>10} {'dflash':>10} {'speedup':>8}  clock / verdict")
    with tempfile.TemporaryDirectory() as tmp:
        for scale in args.scales.split(","):
            base = sweep(scale, [], "kimi26-ep4", args, Path(tmp))
            spec = sweep(scale, DFLASH, "kimi26-ep4-dflash", args, Path(tmp))
            for c, b in base.items():
                d = spec[c]
                # throughputs are divided back by the scale: comparable across scales
                k = float(scale)
                behind = [lv.sim_clock.behind_pct for lv in (b, d) if lv.sim_clock]
                verdict = "valid" if b.valid and d.valid else "INVALID"
                print(
                    f"{scale:>6} {c:>4} {b.output_throughput * k:>10.1f} "
                    f"{d.output_throughput * k:>10.1f} "
                    f"{d.output_throughput / b.output_throughput:>7.2f}x  "
                    f"behind {max(behind or [0]):.1f}% {verdict}"
                )


if __name__ == "__main__":
    main()
