"""Did the simulator keep its own clock during a level? Its `/repro_sim/clock` counters
(sim/clock.py), read at the level's start and end as the energy counter is; a real SGLang
server answers 404 and nothing is recorded. Counters that are not finite numbers or that go
back make the level invalid (`problem`), never a clock that looks kept."""

from __future__ import annotations

from typing import Any

from repro.bench.client.bounded import Refused
from repro.bench.plausible import counter_problem
from repro.bench.session import ServerSession
from repro.schema.server import SimClock

_COUNTERS = ("steps", "scheduled_s", "behind_s", "late_s", "cpu_s", "wall_s")


def _values(data: dict[str, Any]) -> dict[str, float]:
    """The counters as floats; ValueError when one is missing or no number."""
    values: dict[str, float] = {}
    for key in (*_COUNTERS, "time_scale"):
        value = data.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"the simulator's clock {key} is {value!r}, not a number")
        values[key] = float(value)
    floor = data.get("min_time_scale")
    values["min_time_scale"] = float(floor) if isinstance(floor, int | float) else -1.0
    return values


class SimClockMeter:
    """`await start()` before a level's first request, `await stop()` after its last;
    `problem` says why the readings cannot be a simulator's."""

    def __init__(self, session: ServerSession) -> None:
        self.session = session
        self.problem: str | None = None
        self._start: dict[str, float] | None = None

    async def _reading(self) -> dict[str, float] | None:
        try:
            data = await self.session.sim_reading("clock")
            return _values(data) if data is not None else None
        except (Refused, ValueError) as exc:
            self.problem = f"the simulator's clock: {exc}"
            return None

    async def start(self) -> None:
        self._start = await self._reading()

    async def stop(self) -> SimClock | None:
        if self._start is None:
            return None
        end = await self._reading()
        if end is None:
            return None
        self.problem = counter_problem("the simulator's clock", self._start, end, _COUNTERS)
        if self.problem is None and not 0 <= end["time_scale"] < float("inf"):
            self.problem = f"the simulator's clock time_scale is {end['time_scale']:g}"
        if self.problem is not None:
            return None
        d = {key: end[key] - self._start[key] for key in _COUNTERS}
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
