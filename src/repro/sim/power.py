"""The simulated GPUs' energy: the profile's `power` entry applied to the scheduler's steps.

Every GPU draws `idle_w` all along; during a forward step a rank's GPUs draw
`busy_w + per_running_req_w x running requests` (capped at `max_w`). The meter keeps the
energy since the server started, like NVML's energy counter, so a client reads it at a
level's start and end; `/repro_sim/power` serves it, marked simulated.
"""

from __future__ import annotations

import time
from typing import Any

from repro.sim.profile import PowerProfile


class EnergyMeter:
    """Joules used since start by `gpus` simulated GPUs, shared by every DP rank's scheduler."""

    def __init__(self, power: PowerProfile, gpus: int, ranks: int) -> None:
        self.power = power
        self.gpus = max(1, gpus)
        self.gpus_per_rank = max(1.0, self.gpus / max(1, ranks))
        self._t0 = time.perf_counter()
        self._above_idle_j = 0.0

    def step(self, seconds: float, running: int) -> None:
        """A forward step of one rank lasting `seconds` with `running` requests."""
        p = self.power
        watts = p.busy_w + p.per_running_req_w * running
        if p.max_w > 0:
            watts = min(watts, p.max_w)
        self._above_idle_j += max(0.0, watts - p.idle_w) * self.gpus_per_rank * seconds

    def energy_j(self) -> float:
        idle = self.power.idle_w * self.gpus * (time.perf_counter() - self._t0)
        return idle + self._above_idle_j

    def reading(self, profile: str) -> dict[str, Any]:
        return {
            "simulated": True,
            "profile": profile,
            "gpus": self.gpus,
            "energy_j": self.energy_j(),
            "idle_w_per_gpu": self.power.idle_w,
        }
