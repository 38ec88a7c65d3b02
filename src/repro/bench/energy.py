"""A level's energy and cost: NVML readings when this host's GPUs serve the deployment, else
the simulator's power model (marked simulated), else a reason why there are none.

Real readings always win: a simulator running on a GPU host records the GPUs' counters. The
simulator's `/repro_sim/power` (sim/power.py) is read at the level's start and end, as NVML's
energy counter is; a real SGLang server answers 404 and nothing is recorded from it.
"""

from __future__ import annotations

import math
import statistics
import time

from repro.bench.client.bounded import Refused
from repro.bench.session import ServerSession
from repro.bench.telemetry import DEFAULT_INTERVAL_S, GpuSampler, Reading, is_local
from repro.schema.server import GpuEnergy, LevelEnergy


def usd_per_mtok(gpus: int, gpu_hour_usd: float | None, output_tok_s: float) -> float | None:
    """Dollars per million output tokens: what the GPUs cost per second over tokens per
    second; None without a price, a GPU count or any output."""
    if not gpu_hour_usd or gpus <= 0 or output_tok_s <= 0:
        return None
    return gpus * gpu_hour_usd / 3600.0 / output_tok_s * 1e6


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def nvml_energy(reading: Reading) -> LevelEnergy:
    """The level's energy from NVML: each GPU's counter, or its integrated power samples where
    the GPU has no counter."""
    per_gpu = [
        GpuEnergy(
            index=g.index,
            name=g.name,
            energy_j=g.counter_joules(),
            integrated_j=g.integrated_joules(reading.duration_s),
            mean_power_w=_mean(g.power_w),
            max_power_w=max(g.power_w, default=None),
            mean_sm_clock_mhz=_mean(g.sm_clock_mhz),
            max_memory_used_bytes=max(g.memory_used_bytes, default=None),
            mean_utilization_pct=_mean(g.utilization_pct),
        )
        for g in reading.gpus
    ]
    counted = all(g.energy_j is not None for g in per_gpu)
    joules = [g.energy_j if counted else g.integrated_j for g in per_gpu]
    total = sum(j for j in joules if j is not None) if any(j is not None for j in joules) else None
    peaks = [g.max_power_w for g in per_gpu if g.max_power_w is not None]
    duration = reading.duration_s
    return LevelEnergy(
        source="nvml" if counted else "nvml-power-samples",
        reason=None if counted else "a GPU without the energy counter: power samples integrated",
        gpus=len(per_gpu),
        energy_j=total,
        mean_power_w=total / duration if total is not None and duration > 0 else None,
        max_power_w=sum(peaks) if peaks else None,
        duration_s=duration,
        interval_s=reading.interval_s,
        samples=min((len(g.power_w) for g in reading.gpus), default=0),
        sampler_cpu_per_s=reading.sampler_cpu_s / duration if duration > 0 else None,
        per_gpu=per_gpu,
    )


async def _sim_energy(session: ServerSession) -> tuple[float, int] | None:
    """(joules so far, GPUs) from the simulator's power model; None from anything else (a
    reading that is no finite, non-negative number counts as none)."""
    try:
        data = await session.sim_reading("power")
    except Refused:
        return None
    if data is None:
        return None
    joules, gpus = data.get("energy_j"), data.get("gpus")
    if not isinstance(joules, int | float) or not isinstance(gpus, int) or isinstance(gpus, bool):
        return None
    if not (math.isfinite(joules) and joules >= 0 and gpus >= 0):
        return None
    return float(joules), gpus


class LevelMeter:
    """Energy over one level: `await start()` before its first request, `await stop()` after."""

    def __init__(self, session: ServerSession, interval_s: float = DEFAULT_INTERVAL_S) -> None:
        self.session = session
        self.url = session.url
        self.sampler = GpuSampler(interval_s)
        self.why_not: str | None = None
        self._sim0: tuple[float, int] | None = None
        self._t0 = 0.0

    async def start(self) -> None:
        if not is_local(self.url):
            self.why_not = "remote server: this host's GPUs do not serve it"
        elif not self.sampler.start():
            self.why_not = self.sampler.why_not
        if self.why_not:
            self._sim0 = await _sim_energy(self.session)
            self._t0 = time.perf_counter()

    async def stop(self) -> LevelEnergy:
        reading = self.sampler.stop()
        if reading is not None:
            return nvml_energy(reading)
        if self._sim0 is not None:
            end = await _sim_energy(self.session)
            duration = time.perf_counter() - self._t0
            if end is not None and duration > 0 and end[0] >= self._sim0[0]:
                joules = end[0] - self._sim0[0]
                return LevelEnergy(
                    source="simulated",
                    reason=f"the simulator's power model ({self.why_not})",
                    gpus=end[1],
                    energy_j=joules,
                    mean_power_w=joules / duration,
                    duration_s=duration,
                )
        return LevelEnergy(source="none", reason=self.why_not)
