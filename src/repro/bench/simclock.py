"""Did the simulator keep its own clock during a level? Its `/repro_sim/clock` counters
(sim/clock.py), read at the level's start and end as the energy counter is; a real SGLang
server answers 404 and nothing is recorded."""

from __future__ import annotations

from typing import Any

import aiohttp

from repro.schema.server import SimClock

_TIMEOUT = aiohttp.ClientTimeout(total=5)
_COUNTERS = ("steps", "scheduled_s", "behind_s", "late_s", "cpu_s", "wall_s")


async def _reading(url: str) -> dict[str, float] | None:
    try:
        async with (
            aiohttp.ClientSession(timeout=_TIMEOUT) as session,
            session.get(url + "/repro_sim/clock") as resp,
        ):
            if resp.status != 200:
                return None
            data: Any = await resp.json()
    except (TimeoutError, aiohttp.ClientError, OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("simulated") is not True:
        return None
    try:
        values = {key: float(data[key]) for key in (*_COUNTERS, "time_scale")}
        floor = data.get("min_time_scale")
        values["min_time_scale"] = float(floor) if floor is not None else -1.0
    except (KeyError, TypeError, ValueError):
        return None
    if any(v < 0 for k, v in values.items() if k != "min_time_scale"):
        return None  # implausible counters: record nothing rather than a wrong verdict
    return values


class SimClockMeter:
    """`await start()` before a level's first request, `await stop()` after its last."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self._start: dict[str, float] | None = None

    async def start(self) -> None:
        self._start = await _reading(self.url)

    async def stop(self) -> SimClock | None:
        if self._start is None:
            return None
        end = await _reading(self.url)
        if end is None:
            return None
        d = {key: end[key] - self._start[key] for key in _COUNTERS}
        if any(v < 0 for v in d.values()):  # the simulator restarted mid-level
            return None
        steps = int(d["steps"])
        return SimClock(
            time_scale=end["time_scale"],
            steps=steps,
            scheduled_s=d["scheduled_s"],
            behind_s=d["behind_s"],
            behind_pct=d["behind_s"] / d["scheduled_s"] * 100 if d["scheduled_s"] > 0 else None,
            mean_late_ms=d["late_s"] / steps * 1000 if steps else None,
            cpu_per_s=d["cpu_s"] / d["wall_s"] if d["wall_s"] > 0 else None,
            min_time_scale=end["min_time_scale"] if end["min_time_scale"] >= 0 else None,
        )
