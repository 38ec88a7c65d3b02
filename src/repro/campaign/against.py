"""`repro campaign report --against-plan`: each point's predicted and measured output tok/s
side by side, level by level, with the error of the prediction.

The prediction is the plan's (`plan.json`, the simulator's model in virtual time on the point's
profile); the measurement is the point's run folder. A run of the simulator at time scale s
states its tok/s on its scaled clock, so it is multiplied by s to be read on the machine's
clock the prediction stands for; a run at time scale 0 measured no clock and is compared
with nothing. A prediction is believed only when it is a tok/s a server can reach: plan.json
holding NaN, an infinity, a negative or an absurd number is refused, naming the point and the
field, never printed as 0.0, inf or a 300-digit number.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from repro.bench.plausible import MAX_GAUGE
from repro.campaign.decision import PointLevels
from repro.runfolder import RunRecordError
from repro.schema.campaign import CampaignPlan, PlannedPoint
from repro.schema.level import Level


class Side(BaseModel):
    """One level of a point, predicted and measured (output tok/s)."""

    point: str
    concurrency: int
    predicted: float | None = None
    measured: float | None = Field(default=None, description="on the machine's clock")

    @property
    def error(self) -> float | None:
        """predicted / measured - 1 (None unless both exist)."""
        if self.predicted is None or not self.measured:
            return None
        return self.predicted / self.measured - 1.0


def _best(levels: Sequence[Level], scale: float = 1.0) -> dict[int, float]:
    """Each concurrency's best valid repeat, times `scale`."""
    best: dict[int, float] = {}
    for level in levels:
        if level.valid:
            value = level.output_throughput * scale
            best[level.concurrency] = max(best.get(level.concurrency, 0.0), value)
    return best


def _predicted(planned: PlannedPoint, plan_file: Path) -> dict[int, float]:
    """The point's predicted levels (`_best`), refused unless each is a tok/s a server can
    reach: finite, 0 or more, below what any gauge reads."""
    for n, level in enumerate(planned.predicted):
        value = level.output_throughput
        if not 0 <= value < MAX_GAUGE:
            raise RunRecordError(
                f"{plan_file}: point {planned.name}: predicted[{n}].output_throughput "
                f"{value!r} is no prediction (output tok/s: finite, 0 or more, below "
                f"{MAX_GAUGE:.3g})",
                hint="plan.json was edited or damaged: restore it, or predict the campaign "
                "again with `repro campaign plan FILE`",
            )
    return _best(planned.predicted)


def against_plan(
    plan: CampaignPlan, measured: Sequence[PointLevels], plan_file: Path
) -> list[Side]:
    """Every level of every point the plan (read from `plan_file`) runs, predicted beside
    measured."""
    runs = {p.name: p for p in measured}
    sides = []
    for planned in plan.points:
        if planned.same_server_as is not None:
            continue
        predicted = _predicted(planned, plan_file)
        run = runs.get(planned.name)
        scale = 1.0 if run is None or run.time_scale is None else run.time_scale
        seen = _best(run.levels, scale) if run is not None and scale else {}
        for c in sorted({*predicted, *seen}):
            sides.append(Side(point=planned.name, concurrency=c, predicted=predicted.get(c),
                              measured=seen.get(c)))  # fmt: skip
    return sides


def against_lines(sides: Sequence[Side]) -> list[str]:
    """Per point a line with its name, then one per level, and the summary: at most 80
    columns whatever the names."""
    lines: list[str] = []
    point = None
    for side in sides:
        if side.point != point:
            point = side.point
            lines.append(f"{point}:")
        predicted = "-" if side.predicted is None else f"{side.predicted:.1f}"
        measured = "-" if side.measured is None else f"{side.measured:.1f}"
        error = "" if side.error is None else f"{side.error:+.1%}"
        lines.append(f"  c={side.concurrency:<6} {predicted:>12} {measured:>12} {error:>8}")
    errors = sorted(abs(e) for s in sides if (e := s.error) is not None)
    if errors:
        lines.append(
            f"{len(errors)} levels predicted and measured: median |error| "
            f"{errors[len(errors) // 2]:.1%}, worst {errors[-1]:.1%}"
        )
    else:
        lines.append("no level both predicted and measured")
    head = f"{'output tok/s':<10} {'predicted':>12} {'measured':>12} {'error':>8}"
    return [head, *lines]
