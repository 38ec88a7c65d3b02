"""Does repro's GPU sampler (src/repro/bench/telemetry.py) measure a level's energy right, and
what does it cost?

Runs a known load on GPU 0 (a bf16 PyTorch matmul loop) under `GpuSampler` in two windows:
`steady` (the sampler starts after the load warmed up, so power is flat) and `transitions`
(idle, load, idle inside one window). For each it compares the NVML energy counter's joules
(nvmlDeviceGetTotalEnergyConsumption at start and end) with the power samples integrated by
`integrate_power`, and reports the sampler thread's CPU time per second of wall time. It also
times the matmul loop with and without the sampler running. Prints JSON and writes it, with
every sample, to OUT (the test fixture tests/fixtures/gpu/h200_energy.json is one such file):

    pip install nvidia-ml-py torch
    python benchmarks/gpu_energy.py --seconds 8 --interval 0.1 --out h200_energy.json

Needs torch, nvidia-ml-py and one NVIDIA GPU; nothing else of repro's dependencies.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parents[1]
# loaded by path: importing the package would pull in repro.bench's client dependencies,
# which a bare GPU machine with torch does not have; telemetry.py needs only pynvml
_spec = importlib.util.spec_from_file_location(
    "telemetry", REPO / "src" / "repro" / "bench" / "telemetry.py"
)
assert _spec and _spec.loader
telemetry = importlib.util.module_from_spec(_spec)
sys.modules["telemetry"] = telemetry
_spec.loader.exec_module(telemetry)


def matmul_for(seconds: float, size: int = 8192) -> int:
    """Multiply bf16 matrices for `seconds`; returns the iterations done."""
    a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    end, n = time.perf_counter() + seconds, 0
    while time.perf_counter() < end:
        for _ in range(10):
            a @ b
        torch.cuda.synchronize()
        n += 10
    return n


def window(name: str, interval: float, body: Any) -> dict[str, Any]:
    sampler = telemetry.GpuSampler(interval_s=interval, indices=[0])
    if not sampler.start():
        raise SystemExit(f"no NVML: {sampler.why_not}")
    extra = body()
    reading = sampler.stop()
    gpu = reading.gpus[0]
    counter = gpu.counter_joules()
    integrated = gpu.integrated_joules(reading.duration_s)
    return {
        "window": name,
        "gpu": gpu.name,
        "interval_s": interval,
        "duration_s": reading.duration_s,
        "samples": len(gpu.power_w),
        "counter_j": counter,
        "integrated_j": integrated,
        "diff_pct": 100.0 * (integrated - counter) / counter if counter else None,
        "mean_power_w": integrated / reading.duration_s if integrated else None,
        "max_power_w": max(gpu.power_w, default=None),
        "sampler_cpu_s": reading.sampler_cpu_s,
        "sampler_cpu_per_s": reading.sampler_cpu_s / reading.duration_s,
        "load": extra,
        "t_s": gpu.t_s,
        "power_w": gpu.power_w,
        "sm_clock_mhz": gpu.sm_clock_mhz,
        "utilization_pct": gpu.utilization_pct,
        "memory_used_bytes": gpu.memory_used_bytes,
    }


def driver_version() -> str:
    telemetry.pynvml.nvmlInit()
    try:
        return str(telemetry.pynvml.nvmlSystemGetDriverVersion())
    finally:
        telemetry.pynvml.nvmlShutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="load per window")
    parser.add_argument("--interval", type=float, default=0.1, help="s between samples")
    parser.add_argument("--out", type=Path, default=None, help="write the JSON here")
    args = parser.parse_args()

    matmul_for(2.0)  # warm up: cuBLAS handles, clocks up
    t0 = time.perf_counter()
    bare_iters = matmul_for(args.seconds)
    bare_rate = bare_iters / (time.perf_counter() - t0)

    def steady() -> dict[str, float]:
        start = time.perf_counter()
        iters = matmul_for(args.seconds)
        return {"iters_per_s": iters / (time.perf_counter() - start)}

    def transitions() -> dict[str, float]:
        time.sleep(2.0)
        iters = matmul_for(args.seconds / 2)
        time.sleep(2.0)
        return {"iters": iters}

    windows = [window("steady", args.interval, steady)]
    windows.append(window("transitions", args.interval, transitions))
    result = {
        "host": platform.node(),
        "torch": torch.__version__,
        "driver": driver_version(),
        "matmul_iters_per_s_without_sampler": bare_rate,
        "matmul_iters_per_s_with_sampler": windows[0]["load"]["iters_per_s"],
        "windows": windows,
    }
    brief = {k: v for k, v in result.items() if k != "windows"}
    brief["windows"] = [{k: v for k, v in w.items() if not isinstance(v, list)} for w in windows]
    print(json.dumps(brief, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
