"""The simulator's own clock check: did it keep the timeline its profile scheduled?

Every forward step is scheduled on an absolute clock: a busy period starts at the wall time it
begins and each step ends `duration x time-scale` after the previous one's scheduled end, so a
step that woke a little late is made good by the next. When the host cannot emit a step's
outputs in time (the simulator, its HTTP handlers and the benchmark client share the CPU) the
steps start later and later; a debt over DEBT_LIMIT_S is dropped, and the timeline stretches.
`StepClock` counts, per scheduler, the scheduled seconds, the seconds the timeline stretched
(`behind_s`) and how late each step woke; `/repro_sim/clock` and `/metrics` (repro_sim_clock_*)
report them with the process's CPU time, and `repro bench` reads them at each level's start and
end: a level whose timeline stretched by more than its allowance is invalid
(bench/validity.py), because its numbers then measure this host, not the profile.

`host_cost_s_per_token` measures at start what one emitted token costs this host (a streamed
chunk built and serialized, times HOST_FACTOR for the HTTP and client side), and
`min_time_scale` turns it into the smallest `--time-scale` at which the profile's busiest step
still leaves the host time to emit it.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass

DEBT_LIMIT_S = 0.05
"""A step starting this much after its scheduled start drops the debt (the timeline stretches)."""
HOST_FACTOR = 6.0
"""Measured chunk cost x this = a token's host cost (scheduler, HTTP write, client parse)."""
HEADROOM = 0.5
"""The host may spend at most this share of a scheduled step emitting its outputs."""


@dataclass
class ClockStats:
    """Cumulative since the server started (all schedulers summed in `/repro_sim/clock`)."""

    steps: int = 0
    scheduled_s: float = 0.0
    behind_s: float = 0.0
    late_s: float = 0.0
    max_late_s: float = 0.0

    def add(self, other: ClockStats) -> None:
        self.steps += other.steps
        self.scheduled_s += other.scheduled_s
        self.behind_s += other.behind_s
        self.late_s += other.late_s
        self.max_late_s = max(self.max_late_s, other.max_late_s)


class StepClock:
    """One scheduler's absolute step clock and its lag counters."""

    def __init__(self, time_scale: float) -> None:
        self.time_scale = time_scale
        self.stats = ClockStats()
        self._end: float | None = None  # the last step's scheduled end; None while idle
        self._carried = 0.0  # debt the last step could not absorb in its own duration

    def idle(self) -> None:
        """The scheduler has nothing to run: an idle server owes no time. The debt the last
        step carried past its own duration counts as stretch (a late wake-up that the step
        absorbed is lateness, not stretch)."""
        if self._end is not None and self.time_scale > 0:
            self.stats.behind_s += self._carried
        self._end = None
        self._carried = 0.0

    async def step(self, ms: float) -> float:
        """Wait out a step of `ms` simulated milliseconds; returns its scaled seconds."""
        duration = ms * self.time_scale / 1000.0
        now = time.perf_counter()
        if self._end is None:
            self._end = now
        elif now - self._end > DEBT_LIMIT_S:  # far behind (CPU-bound): do not try to catch up
            if self.time_scale > 0:
                self.stats.behind_s += now - self._end
            self._end = now
        self._carried = max(0.0, now - self._end - duration)
        self._end += duration
        self.stats.steps += 1
        self.stats.scheduled_s += duration
        delay = self._end - now
        await asyncio.sleep(delay if delay > 0 else 0)
        late = time.perf_counter() - self._end
        if late > 0 and self.time_scale > 0:
            self.stats.late_s += late
            self.stats.max_late_s = max(self.stats.max_late_s, late)
        return duration

    def snapshot(self) -> ClockStats:
        """The counters now, the current busy period's debt included."""
        stats = ClockStats(**vars(self.stats))
        stats.behind_s += self._carried
        return stats


def host_cost_s_per_token(samples: int = 2000) -> float:
    """What emitting one token costs this host, in CPU seconds (measured, times HOST_FACTOR)."""
    chunk = {
        "text": "token ",
        "output_ids": [1234],
        "meta_info": {
            "id": "0123456789abcdef",
            "finish_reason": None,
            "prompt_tokens": 512,
            "completion_tokens": 17,
            "cached_tokens": 0,
            "spec_verify_ct": 6,
            "e2e_latency": 0.5,
        },
    }
    start = time.process_time()
    for i in range(samples):
        chunk["meta_info"]["completion_tokens"] = i  # type: ignore[index]
        (b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\n\n").decode()
    return (time.process_time() - start) / samples * HOST_FACTOR


def min_time_scale(step_ms: float, tokens_per_step: float, cost_s_per_token: float) -> float:
    """The smallest time-scale at which a step of `step_ms` simulated ms that emits
    `tokens_per_step` tokens leaves the host twice the time it needs (HEADROOM)."""
    if step_ms <= 0:
        return 0.0
    need_s = tokens_per_step * cost_s_per_token / HEADROOM
    return need_s / (step_ms / 1000.0)
