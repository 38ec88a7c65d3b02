"""The decision a campaign ends in, from its points' levels (measured, or predicted where a
point has not run): the best per concurrency, the winner under each SLO and the highest
concurrency that meets it, the Pareto frontier of throughput per GPU against speed per user,
throughput at equal interactivity, and where a drafter stops paying for itself.

Only valid levels count. Across machines (campaigns side by side) nothing is compared at equal
concurrency, only at equal interactivity (tok/s per user) and on one frontier: a PCIe box and
a B300 at the same concurrency serve their users at very different speeds.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from pydantic import BaseModel, Field

from repro.bench.energy import usd_per_mtok
from repro.bench.slo import bracket, meets
from repro.campaign.assumed import inputs, interval_stated, labelled
from repro.report.interactivity import per_gpu, throughput_at
from repro.schema.level import Level

# Per-user speeds (output tok/s per user) at which points are compared by default.
INTERACTIVITY_TOK_S = (10.0, 20.0, 40.0, 80.0)


NOT_LOSSLESS = "[NOT LOSSLESS]"  # beside every name of a point whose outputs diverge


def marked(name: str, diverges: bool) -> str:
    """A point's name as a verdict shows it: marked when its outputs differ from its
    baseline's, so it is never named best without the mark."""
    return f"{name} {NOT_LOSSLESS}" if diverges else name


class Lossless(BaseModel):
    """A drafter point's output token ids at temperature 0 against its baseline point's."""

    baseline: str
    passed: bool | None = Field(description="None: not checked (the reason says why)")
    verdict: str = Field(description="one line: identical, where it diverges, or why unchecked")


class PointLevels(BaseModel):
    """One point's levels and what they are."""

    name: str
    campaign: str = ""
    machine: str
    gpus: int
    source: str = Field(description="measured, or predicted (profile NAME); a failure's reason")
    served_by: str | None = Field(
        default=None, description="what served the levels: GPUs and engine, or the simulator"
    )
    simulated: bool = False
    started_at: str | None = Field(default=None, description="when its run started (UTC)")
    drafter: str | None = None
    baseline: str | None = None
    status: str = "done"
    levels: list[Level] = Field(default_factory=list)
    time_scale: float | None = Field(
        default=None,
        description="the simulator's time scale of its run (None: the machine's own clock, or "
        "a prediction); 0 measured no clock, so the point is never ranked",
    )
    assumed: list[str] = Field(
        default_factory=list,
        description="what its numbers assume (a prediction's, a simulated run's), named in "
        "every verdict they feed (repro.campaign.assumed)",
    )
    gpu_hour_usd: float | None = Field(default=None, description="price of one GPU-hour")
    price_source: str | None = Field(default=None, description="where the price was read")
    lossless: Lossless | None = Field(
        default=None,
        description="a drafter point's outputs against its baseline's (None: no "
        "baseline point to compare with)",
    )

    @property
    def diverges(self) -> bool:
        """Its outputs differ from its baseline's: speculation changed what the model says."""
        return self.lossless is not None and self.lossless.passed is False

    @property
    def label(self) -> str:
        return self.name

    def valid(self) -> list[Level]:
        return sorted((lv for lv in self.levels if lv.valid), key=lambda lv: lv.concurrency)

    @property
    def ranked(self) -> bool:
        return self.time_scale != 0

    def per_gpu(self, level: Level) -> float:
        return per_gpu(level, self.gpus)


class SloBoundary(BaseModel):
    """Where a point stops meeting an SLO: between two measured levels, and interpolated."""

    meets_up_to: int | None = Field(description="highest measured level that meets it")
    fails_from: int | None = Field(description="lowest measured level above it that fails")
    estimate: float | None = Field(
        description="the crossing, interpolated in log2(concurrency) on the limiting key"
    )


class SloWinner(BaseModel):
    slo: str
    not_lossless: bool = Field(default=False, description="its outputs diverge")
    limits: dict[str, float]
    point: str | None = Field(description="None: no level of any point meets it")
    machine: str | None = None
    concurrency: int | None = None
    output_throughput_per_gpu: float | None = None
    highest_concurrency: dict[str, SloBoundary] = Field(
        default_factory=dict, description="per point: the highest concurrency meeting the SLO"
    )
    assumed: list[str] = Field(default_factory=list, description="what the winner's numbers assume")


class CostRow(BaseModel):
    """A point's cheapest level meeting an SLO: the most output tok/s per GPU it reaches there,
    priced at its GPU-hour."""

    point: str
    machine: str
    concurrency: int | None = Field(description="None: no level of the point meets the SLO")
    tok_s_per_gpu: float | None = None
    gpu_hour_usd: float | None = None
    price_source: str | None = None
    not_lossless: bool = Field(default=False, description="its outputs diverge")
    usd_per_mtok: float | None = Field(
        default=None, description="$ per million output tokens (None: no price, or no level)"
    )


class SloCost(BaseModel):
    """The points under one SLO, cheapest per million output tokens first; those without a
    price or a level meeting it last."""

    slo: str
    rows: list[CostRow]


class FrontierPoint(BaseModel):
    point: str
    not_lossless: bool = Field(default=False, description="its outputs diverge")
    machine: str
    concurrency: int
    tok_s_per_user: float
    tok_s_per_gpu: float


class Crossover(BaseModel):
    """Where a drafter point's speedup over its baseline falls to 1.0."""

    point: str
    baseline: str
    speedups: dict[int, float] = Field(description="concurrency -> throughput ratio")
    accept_lengths: dict[int, float | None] = Field(default_factory=dict)
    concurrency: float | None = Field(description="None: it pays (or loses) at every level")
    interval: tuple[float, float] | None = Field(
        default=None, description="the crossing of the ratio's 95% bounds (from each level's CI)"
    )
    tok_s_per_user: float | None = Field(
        default=None, description="the drafter's per-user speed there"
    )
    verdict: str
    assumed: list[str] = Field(
        default_factory=list, description="what the two points' numbers assume (no interval then)"
    )


class Decision(BaseModel):
    metric: str = "output_throughput"
    concurrencies: list[int]
    table: dict[str, dict[int, float | None]] = Field(description="point -> concurrency -> value")
    best: dict[int, str] = Field(description="concurrency -> the best point there")
    peak: dict[str, float] = Field(description="point -> its highest value over valid levels")
    slo_winners: list[SloWinner] = Field(default_factory=list)
    cost: list[SloCost] = Field(
        default_factory=list, description="per SLO: the points by $ per million output tokens"
    )
    frontier: list[FrontierPoint] = Field(default_factory=list)
    at_interactivity: dict[str, dict[float, float | None]] = Field(
        default_factory=dict, description="point -> tok/s per user -> tok/s per GPU"
    )
    crossovers: list[Crossover] = Field(default_factory=list)
    clock: str = Field("", description="the time scale the numbers were taken at")
    not_lossless: list[str] = Field(
        default_factory=list,
        description=f"points whose outputs differ from their baseline's: {NOT_LOSSLESS} beside "
        "their names wherever they are named",
    )
    unranked: list[str] = Field(
        default_factory=list,
        description="points shown but not ranked (no best, peak, SLO winner, frontier or "
        "crossover): they measured no clock",
    )


def decide(
    points: Sequence[PointLevels],
    slos: dict[str, dict[str, float]],
    speeds: Sequence[float] = INTERACTIVITY_TOK_S,
    clock: str = "",
) -> Decision:
    """The decision over the points marked `ranked`; the others are only tabulated."""
    concurrencies = sorted({lv.concurrency for p in points for lv in p.valid()})
    table = {p.name: _best_of_repeats(p) for p in points}
    ranked = [p for p in points if p.ranked]
    best: dict[int, str] = {}
    for c in concurrencies:
        values = {p.name: v for p in ranked if (v := table[p.name].get(c)) is not None}
        if values:
            best[c] = max(values, key=lambda name: values[name] or 0.0)
    peak = {
        p.name: max(finite)
        for p in ranked
        if (finite := [v for v in table[p.name].values() if v is not None])
    }
    return Decision(
        concurrencies=concurrencies,
        table=table,
        best=best,
        peak=peak,
        slo_winners=[_slo_winner(name, limits, ranked) for name, limits in slos.items()]
        if ranked
        else [],
        cost=[_slo_cost(name, limits, ranked) for name, limits in slos.items()],
        frontier=pareto_frontier(ranked),
        at_interactivity={p.name: {s: at_speed(p, s) for s in speeds} for p in ranked},
        crossovers=[
            crossover(p, baseline)
            for p in ranked
            if p.drafter and p.baseline
            for baseline in ranked
            if baseline.name == p.baseline
        ],
        clock=clock,
        not_lossless=[p.name for p in points if p.diverges],
        unranked=[p.name for p in points if not p.ranked],
    )


def _best_of_repeats(point: PointLevels) -> dict[int, float | None]:
    row: dict[int, float | None] = {}
    for level in point.valid():
        previous = row.get(level.concurrency)
        row[level.concurrency] = max(previous or 0.0, level.output_throughput)
    return row


def _slo_winner(name: str, limits: dict[str, float], points: Sequence[PointLevels]) -> SloWinner:
    winner = SloWinner(slo=name, limits=limits, point=None)
    best = -1.0
    for point in points:
        for level in point.valid():
            if meets(level, limits) and point.per_gpu(level) > best:
                best = point.per_gpu(level)
                winner.point, winner.machine = point.name, point.machine
                winner.not_lossless = point.diverges
                winner.concurrency = level.concurrency
                winner.assumed = list(point.assumed)
                winner.output_throughput_per_gpu = best
        winner.highest_concurrency[point.name] = slo_boundary(point, limits)
    return winner


def _slo_cost(name: str, limits: dict[str, float], points: Sequence[PointLevels]) -> SloCost:
    rows = []
    for point in points:
        meeting = [lv for lv in point.valid() if meets(lv, limits)]
        best = max(meeting, key=point.per_gpu, default=None)
        row = CostRow(
            point=point.name,
            machine=point.machine,
            concurrency=best.concurrency if best else None,
            gpu_hour_usd=point.gpu_hour_usd,
            price_source=point.price_source,
            not_lossless=point.diverges,
        )
        if best is not None:
            row.tok_s_per_gpu = point.per_gpu(best)
            row.usd_per_mtok = usd_per_mtok(point.gpus, point.gpu_hour_usd, best.output_throughput)
        rows.append(row)
    rows.sort(
        key=lambda r: (r.usd_per_mtok is None, r.usd_per_mtok or 0.0, -(r.tok_s_per_gpu or 0))
    )
    return SloCost(slo=name, rows=rows)


def slo_boundary(point: PointLevels, limits: dict[str, float]) -> SloBoundary:
    """The highest measured level that meets the SLO with every level below it, the first that
    fails, and the crossing between them on the key that fails (log2 concurrency)."""
    below, above = bracket(point.valid(), limits)
    meets_up_to = below.concurrency if below is not None else None
    fails_from = above.concurrency if above is not None else None
    if below is None or above is None:
        return SloBoundary(meets_up_to=meets_up_to, fails_from=fails_from, estimate=None)
    estimate = float(above.concurrency)
    for key, limit in limits.items():
        low, high = getattr(below, key), getattr(above, key)
        if high is None or high <= limit or low is None or high <= low:
            continue
        share = (limit - low) / (high - low)
        span = math.log2(above.concurrency / below.concurrency)
        c = 2 ** (math.log2(below.concurrency) + share * span)
        estimate = min(estimate, c)
    return SloBoundary(meets_up_to=meets_up_to, fails_from=fails_from, estimate=estimate)


def pareto_frontier(points: Sequence[PointLevels]) -> list[FrontierPoint]:
    """The levels no other level beats on both tok/s per user and tok/s per GPU."""
    candidates = [
        FrontierPoint(
            point=p.name,
            machine=p.machine,
            concurrency=lv.concurrency,
            tok_s_per_user=lv.output_throughput_per_user,
            tok_s_per_gpu=p.per_gpu(lv),
            not_lossless=p.diverges,
        )
        for p in points
        for lv in p.valid()
        if lv.output_throughput_per_user is not None
    ]
    frontier = [
        a
        for a in candidates
        if not any(
            (b.tok_s_per_user >= a.tok_s_per_user and b.tok_s_per_gpu > a.tok_s_per_gpu)
            or (b.tok_s_per_user > a.tok_s_per_user and b.tok_s_per_gpu >= a.tok_s_per_gpu)
            for b in candidates
        )
    ]
    return sorted(frontier, key=lambda f: f.tok_s_per_user)


def at_speed(point: PointLevels, tok_s_per_user: float) -> float | None:
    """The point's tok/s per GPU where its users get `tok_s_per_user` (None outside what it
    measured)."""
    return throughput_at(point.levels, point.gpus, tok_s_per_user)


def crossover(point: PointLevels, baseline: PointLevels) -> Crossover:
    """The concurrency at which the drafter point's throughput ratio to its baseline falls to
    1.0 (interpolated in log2 concurrency), with the crossing of the ratio's 95% bounds."""
    mine = {lv.concurrency: lv for lv in point.valid()}
    theirs = {lv.concurrency: lv for lv in baseline.valid()}
    common = sorted(set(mine) & set(theirs))
    assumed = inputs(point.assumed, baseline.assumed)
    ratio = {c: _ratio(mine[c], theirs[c], 0) for c in common}
    low = {c: _ratio(mine[c], theirs[c], -1) for c in common}
    high = {c: _ratio(mine[c], theirs[c], 1) for c in common}
    at = _crossing(ratio)
    bounds = (_crossing(low), _crossing(high))
    interval = None
    measured = interval_stated(assumed)
    if measured and at is not None and bounds[0] is not None and bounds[1] is not None:
        interval = (min(bounds[0], bounds[1]), max(bounds[0], bounds[1]))
    speed = None
    if at is not None:
        speed = _interpolate({c: mine[c].output_throughput_per_user for c in common}, at)

    def _speedup(c: int) -> str:
        spread = f", 95% {low[c]:.3f}-{high[c]:.3f}" if measured else ""
        return f"{ratio[c]:.3f}x at c={c}{spread}"

    if not common:
        verdict = "no common valid levels"
    elif at is not None:
        verdict = f"pays below c~{at:.0f}, loses above"
    elif all(v > 1.0 for v in ratio.values()):
        least = min(common, key=lambda c: ratio[c])
        verdict = f"pays at every level up to c={common[-1]} (least {_speedup(least)})"
    elif all(v <= 1.0 for v in ratio.values()):
        best = max(common, key=lambda c: ratio[c])
        verdict = f"does not pay at any level (best {_speedup(best)})"
    else:  # below 1.0 first, above it later: no loss of a gain to report, say where it pays
        paying = [c for c, v in ratio.items() if v > 1.0]
        verdict = f"pays only at c={', '.join(str(c) for c in paying)}"
    return Crossover(
        point=point.name,
        baseline=baseline.name,
        speedups={c: round(v, 4) for c, v in ratio.items()},
        accept_lengths={c: mine[c].accept_length for c in common},
        concurrency=at,
        interval=interval,
        tok_s_per_user=speed,
        verdict=labelled(verdict, assumed),
        assumed=assumed,
    )


def _ratio(a: Level, b: Level, side: int) -> float:
    """a/b at the value (side 0), its low bound (-1: a low over b high) or high bound (1)."""
    if side == 0 or a.output_throughput_ci95 is None or b.output_throughput_ci95 is None:
        return a.output_throughput / b.output_throughput if b.output_throughput else math.inf
    num = a.output_throughput_ci95.low if side < 0 else a.output_throughput_ci95.high
    den = b.output_throughput_ci95.high if side < 0 else b.output_throughput_ci95.low
    return num / den if den else math.inf


def _crossing(ratio: dict[int, float]) -> float | None:
    """The first concurrency where the ratio goes from above 1.0 to 1.0 or below."""
    items = sorted(ratio.items())
    for (c0, r0), (c1, r1) in itertools.pairwise(items):
        if r0 > 1.0 >= r1:
            share = (r0 - 1.0) / (r0 - r1)
            return float(2 ** (math.log2(c0) + share * math.log2(c1 / c0)))
    return None


def _interpolate(values: dict[int, float | None], at: float) -> float | None:
    items = sorted((c, v) for c, v in values.items() if v is not None)
    for (c0, v0), (c1, v1) in itertools.pairwise(items):
        if c0 <= at <= c1:
            share = math.log2(at / c0) / math.log2(c1 / c0)
            return v0 + share * (v1 - v0)
    return None
