"""Numbers on different clocks are not compared as equals.

A simulated run's durations are the profile's multiplied by its `--time-scale` (its
throughputs by 1/X), so a run at 0.1 is not ten times faster than the same recipe at 1: it
is on another clock. Compare and report refuse to set such runs side by side (speedups,
best marks, one curve next to another) and say which run is on which scale. A real server
and a simulated run without a recorded scale count as scale 1.
"""

from __future__ import annotations

from collections.abc import Sequence

from repro.errors import ReproError
from repro.report.records import LoadedRun


def time_scale(run: LoadedRun) -> float:
    """The factor the run's durations carry: the simulator's --time-scale, else 1."""
    info = run.server_info
    if not run.simulated or info is None or info.sim_time_scale is None:
        return 1.0
    return info.sim_time_scale


def require_one_time_scale(runs: Sequence[LoadedRun]) -> None:
    """A ReproError naming each run's scale when the runs are not all on one."""
    by_scale: dict[float, list[str]] = {}
    for run in runs:
        by_scale.setdefault(time_scale(run), []).append(run.label or run.path.name)
    if len(by_scale) <= 1:
        return
    shown = "; ".join(
        f"{', '.join(labels)} at {scale:g}" for scale, labels in sorted(by_scale.items())
    )
    raise ReproError(
        f"these runs were simulated at different time scales ({shown}): their throughputs "
        "and latencies differ by the scale, not by the server, so they are not compared",
        hint="re-run them at one --time-scale (1: the profile's own timing), "
        "or report each scale on its own",
    )
