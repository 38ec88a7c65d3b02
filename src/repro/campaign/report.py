"""`repro campaign report` and the plan's predicted table: a campaign's points as levels (its
run folders where measured, the plan's prediction where not), the decision over one or more
campaigns, and its terminal tables, HTML page and plots.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from repro.campaign.assumed import engine, labelled, simulated_source
from repro.campaign.decision import (
    CostRow,
    Crossover,
    Decision,
    PointLevels,
    SloBoundary,
    SloWinner,
    decide,
    marked,
)
from repro.campaign.folder import CampaignFolder
from repro.campaign.lossless import pairs, verdict
from repro.errors import ReproError
from repro.report.records import load_run
from repro.report.timescale import time_scale
from repro.runfolder import RunFolder
from repro.schema.campaign import CampaignPlan, PlannedPoint, PointState
from repro.schema.level import Level
from repro.tables import fit


def predicted_points(plan: CampaignPlan) -> list[PointLevels]:
    """The plan's points with their predicted levels (labelled with the profile)."""
    points = []
    for p in plan.points:
        if p.same_server_as is not None:
            continue
        if p.profile:
            source = "; ".join([f"predicted ({p.profile})", *p.caveats])
        else:
            source = (
                f"no prediction: {p.prediction_error}" if p.prediction_error else "not predicted"
            )
        points.append(_point(plan, p, source, "planned", p.predicted))
    _price(points, plan, {})
    return points


def clock(scales: set[float | None]) -> str:
    """The time scales points' numbers were taken at, in words (None: the machine's own
    clock)."""
    words = []
    for scale in sorted(scales, key=lambda s: -1.0 if s is None else s):
        if scale is None:
            words.append("1 (measured on the machine's own clock)")
        elif scale:
            words.append(f"{scale:g} (simulated)")
        else:
            words.append(
                "0 (simulated without waiting: its numbers measure only this host, so they are "
                "not ranked: no best, peak, SLO winner, frontier or crossover)"
            )
    return "; ".join(words)


def measured_points(
    folder: CampaignFolder, prices: dict[str, float] | None = None
) -> list[PointLevels]:
    """The campaign's points with the levels their run folders hold (finished levels of a
    point that failed part-way count too; a point that never ran has none), each with the
    time scale its run was simulated at (the index's for one that never ran), its GPU-hour
    price (`prices` by machine, else the campaign file's) and a drafter point's lossless
    verdict against its baseline point."""
    plan, index = folder.read_plan(), folder.read_index()
    states = {s.name: s for s in index.points}
    points = []
    for p in plan.points:
        if p.same_server_as is not None:
            continue
        state = states.get(p.name) or PointState(name=p.name)
        source = state.status if state.reason is None else f"{state.status}: {state.reason}"
        run_dir = folder.measured_run(p.name, state)
        point = _point(plan, p, source, state.status, [])
        point.time_scale = index.time_scale if index.simulated else None  # until a run exists
        if run_dir is not None and RunFolder(run_dir).bench.has_run():
            run = load_run(run_dir)
            point.levels = run.levels
            point.source, point.assumed = simulated_source(run.sim_profile, p, run.simulated)
            point.served_by, point.simulated = run.machine_class, run.simulated
            if run.simulated and run.sim_profile == p.profile:
                point.served_by = engine(run.machine_class, p.provenance)
            point.time_scale = time_scale(run) if run.simulated else None
            point.started_at = run.run.started_at
        points.append(point)
    _price(points, plan, prices or {})
    for drafter, baseline in pairs(plan):
        found = next(p for p in points if p.name == drafter.name)
        found.lossless = verdict(folder.path, drafter.name, baseline.name)
    return points


def _price(points: list[PointLevels], plan: CampaignPlan, prices: dict[str, float]) -> None:
    """Each point's GPU-hour price and where it was read."""
    machine, given = plan.campaign.machine, prices.get(plan.campaign.machine)
    for point in points:
        if given is not None:
            point.gpu_hour_usd, point.price_source = given, f"--gpu-hour-usd {machine}={given:g}"
        elif plan.campaign.gpu_hour_usd is not None:
            point.gpu_hour_usd = plan.campaign.gpu_hour_usd
            point.price_source = f"campaign {plan.campaign.name}'s gpu_hour_usd"


def _point(
    plan: CampaignPlan, p: PlannedPoint, source: str, status: str, levels: list[Level]
) -> PointLevels:
    return PointLevels(
        name=p.name,
        campaign=plan.campaign.name,
        machine=plan.campaign.machine,
        gpus=p.gpus,
        source=source,
        drafter=p.drafter,
        baseline=p.baseline,
        assumed=p.assumed,
        status=status,
        levels=levels,
    )


def campaign_decision(
    folders: Sequence[Path], prices: dict[str, float] | None = None
) -> tuple[Decision, list[PointLevels]]:
    """The decision over the campaign folders given (several: e.g. one per machine), priced
    at `prices` (machine -> $/GPU-hour) over the campaign files'; point names are prefixed
    with the machine when campaigns of several machines are joined."""
    if not folders:
        raise ReproError("give at least one campaign folder")
    opened = [CampaignFolder.open(path) for path in folders]
    points: list[PointLevels] = []
    slos: dict[str, dict[str, float]] = {}
    machines = {f.read_plan().campaign.machine for f in opened}
    for folder in opened:
        plan = folder.read_plan()
        slos.update(plan.campaign.slos)
        for point in measured_points(folder, prices):
            if len(machines) > 1:
                point.name = f"{point.machine}/{point.name}"
                point.baseline = f"{point.machine}/{point.baseline}" if point.baseline else None
                if point.lossless is not None:
                    point.lossless.baseline = point.baseline or point.lossless.baseline
            points.append(point)
    stated = clock({p.time_scale for p in points if p.levels})
    return decide(points, slos, clock=stated), points


# ---- the terminal ----------------------------------------------------------------------------
NOT_JUDGED = "not judged: no point has a valid level, predicted or measured"


def render_terminal(decision: Decision, points: Sequence[PointLevels]) -> RenderableType:
    parts: list[RenderableType] = [Text(TABLE_TITLE), fit(summary_table(decision, points))]
    parts += [_source(point) for point in points]  # each name marked where it diverges
    if decision.clock:
        parts.append(Text(f"time scale: {decision.clock}"))
    if decision.unranked:
        parts.append(Text(f"not ranked (no clock measured): {', '.join(decision.unranked)}"))
    judged = any(point.valid() for point in points)
    for winner in decision.slo_winners:
        verdict = slo_verdict(winner, judged)
        parts.append(Text(f"SLO {winner.slo} ({slo_bounds(winner)}): {verdict}"))
        for name, bound in winner.highest_concurrency.items():
            if (where := boundary_text(bound)) is not None:
                shown = marked(name, name in decision.not_lossless)
                parts.append(Text(f"  {shown}: {where}"))
    if any(p.gpu_hour_usd for p in points):
        for cost in decision.cost:
            parts.append(Text(f"SLO {cost.slo} by $ per million output tokens (cheapest first):"))
            parts += [Indented(Text(cost_text(row)), 2) for row in cost.rows]
    elif decision.cost:
        parts.append(Text(f"$ per million output tokens: {NO_PRICE}"))
    checked = [p for p in points if p.lossless is not None]
    if checked:
        parts.append(Text(f"lossless ({LOSSLESS_RULE}):"))
        parts += [Indented(Text(lossless_text(p)), 2) for p in checked]
    for cross in decision.crossovers:
        name = marked(cross.point, cross.point in decision.not_lossless)
        parts.append(Text(f"{name} vs {cross.baseline}: {crossover_text(cross)}"))
    if decision.frontier:
        best = ", ".join(
            f"{marked(f.point, f.not_lossless)}@c{f.concurrency} "
            f"({f.tok_s_per_user:.0f}/user, {f.tok_s_per_gpu:.0f}/GPU)"
            for f in decision.frontier
        )
        parts.append(Text(f"Pareto frontier (tok/s per user, per GPU): {best}"))
    return Group(*parts)


NO_PRICE = "no price (gpu_hour_usd in the campaign file, or --gpu-hour-usd MACHINE=USD)"
LOSSLESS_RULE = "output token ids at temperature 0 against the baseline point's"


def lossless_text(point: PointLevels) -> str:
    """`name vs baseline: lossless: 8/8 identical at c=1, ...`."""
    check = point.lossless
    if check is None:
        return f"{point.name}: no baseline point"
    return f"{marked(point.name, point.diverges)} vs {check.baseline}: {check.verdict}"


def cost_text(row: CostRow) -> str:
    """One point's $/Mtok under an SLO, with the per-GPU throughput and the price's source."""
    name = marked(row.point, row.not_lossless)
    if row.concurrency is None or row.tok_s_per_gpu is None:
        return f"{name}: no level meets it"
    at = f"c={row.concurrency}, {row.tok_s_per_gpu:.1f} output tok/s per GPU"
    if row.usd_per_mtok is None or row.gpu_hour_usd is None:
        return f"{name}: {at}; {NO_PRICE}"
    price = f"${row.gpu_hour_usd:g}/GPU-hour from {row.price_source}"
    return f"{name}: ${row.usd_per_mtok:.2f}/Mtok at {at} ({price})"


def slo_bounds(winner: SloWinner) -> str:
    """`p90_ttft_ms <= 2000, p90_tpot_ms <= 50`: the SLO's bounds, as the campaign file has them."""
    return ", ".join(f"{key} <= {limit:g}" for key, limit in winner.limits.items())


def slo_verdict(winner: SloWinner, judged: bool = True) -> str:
    """The SLO's winner, or why there is none (`judged`: some point has a valid level)."""
    if winner.point is None:
        return "no level of any point meets it" if judged else NOT_JUDGED
    return labelled(
        f"{marked(winner.point, winner.not_lossless)} at c={winner.concurrency}, "
        f"{winner.output_throughput_per_gpu or 0:.1f} output tok/s per GPU",
        winner.assumed,
    )


def boundary_text(bound: SloBoundary) -> str | None:
    """Where a point stops meeting an SLO (None: no level meets it)."""
    if bound.meets_up_to is None:
        return None
    where = f"meets it up to c={bound.meets_up_to}"
    if bound.fails_from is not None and bound.estimate is not None:
        where += f", fails at c={bound.fails_from} (boundary ~{bound.estimate:.0f})"
    return where


def crossover_text(cross: Crossover) -> str:
    """The drafter's verdict against its baseline, with the 95% crossing when there is one."""
    text = cross.verdict
    if cross.interval is not None:
        text += f" (95%: c {cross.interval[0]:.0f}-{cross.interval[1]:.0f})"
    return text


def _source(point: PointLevels) -> RenderableType:
    """`  name: source`, every line of a failure kept (a lock's problems under its first line),
    each wrapped at the terminal's width under its own indent."""
    first, *rest = [line.strip() for line in point.source.splitlines() if line.strip()] or [""]
    lines = [Indented(Text(f"{marked(point.name, point.diverges)}: {first}"), 2)]
    lines += [Indented(Text(line), 6) for line in rest]
    return Group(*lines)


class Indented:
    """Text wrapped at the width left after `indent` spaces, each line indented; unlike rich's
    Padding, no line is padded with spaces to the width (a copied line has none at its end)."""

    def __init__(self, text: Text, indent: int) -> None:
        self.text, self.indent = text, indent

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        margin = Segment(" " * self.indent)
        for line in self.text.wrap(console, max(1, options.max_width - self.indent)):
            line.rstrip()
            yield margin
            yield from line.render(console)
            yield Segment.line()


TABLE_TITLE = "output tok/s by concurrency (* best there, ^ the point's peak)"


def cell(decision: Decision, point: str, concurrency: int) -> str:
    """A point's output tok/s at a concurrency: `-` where no valid level, `*` the best there,
    `^` the point's peak."""
    value = decision.table.get(point, {}).get(concurrency)
    if value is None:
        return "-"
    best = "*" if decision.best.get(concurrency) == point else ""
    return f"{value:.0f}{best}{'^' if decision.peak.get(point) == value else ''}"


def summary_table(decision: Decision, points: Sequence[PointLevels]) -> Table:
    """Points as rows, concurrency as columns (output tok/s): * best in its column, ^ the
    point's peak."""
    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 0, 0, 1),
    )
    table.add_column("point", overflow="fold")
    for c in decision.concurrencies:
        table.add_column(str(c), justify="right", no_wrap=True)
    for point in points:
        name = marked(point.name, point.diverges)
        table.add_row(name, *(cell(decision, point.name, c) for c in decision.concurrencies))
    return table
