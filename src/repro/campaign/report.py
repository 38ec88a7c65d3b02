"""`repro campaign report` and the plan's predicted table: a campaign's points as levels (its
run folders where measured, the plan's prediction where not), the decision over one or more
campaigns, and its terminal tables, HTML page and plots.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from repro.campaign.decision import Decision, PointLevels, decide
from repro.campaign.folder import CampaignFolder
from repro.errors import ReproError
from repro.report.records import load_run
from repro.runfolder import RunFolder
from repro.schema.campaign import CampaignPlan, PlannedPoint, PointState
from repro.schema.level import Level
from repro.tables import stacked

NAME_WIDTH = 16  # the point column; longer names fold onto a second line


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


def measured_points(folder: CampaignFolder) -> list[PointLevels]:
    """The campaign's points with the levels their run folders hold (finished levels of a
    point that failed part-way count too; a point that never ran has none), each with the
    time scale its run was simulated at (the index's for one that never ran)."""
    plan, index = folder.read_plan(), folder.read_index()
    states = {s.name: s for s in index.points}
    points = []
    for p in plan.points:
        if p.same_server_as is not None:
            continue
        state = states.get(p.name) or PointState(name=p.name)
        levels: list[Level] = []
        source = state.status if state.reason is None else f"{state.status}: {state.reason}"
        run_dir = folder.run_dir_of(state)
        scale = index.time_scale if index.simulated else None
        if run_dir is not None and RunFolder(run_dir).bench.has_run():
            run = load_run(run_dir)
            levels = run.levels
            source = f"simulated ({run.sim_profile})" if run.simulated else "measured"
            info = run.server_info
            scale = info.sim_time_scale if run.simulated and info is not None else None
        point = _point(plan, p, source, state.status, levels)
        point.time_scale = scale
        points.append(point)
    return points


def _point(
    plan: CampaignPlan, p: PlannedPoint, source: str, status: str, levels: list[Level]
) -> PointLevels:
    return PointLevels(
        name=p.name,
        machine=plan.campaign.machine,
        gpus=p.gpus,
        source=source,
        drafter=p.drafter,
        baseline=p.baseline,
        status=status,
        levels=levels,
    )


def campaign_decision(folders: Sequence[Path]) -> tuple[Decision, list[PointLevels]]:
    """The decision over the campaign folders given (several: e.g. one per machine); point
    names are prefixed with the machine when campaigns of several machines are joined."""
    if not folders:
        raise ReproError("give at least one campaign folder")
    opened = [CampaignFolder.open(path) for path in folders]
    points: list[PointLevels] = []
    slos: dict[str, dict[str, float]] = {}
    machines = {f.read_plan().campaign.machine for f in opened}
    for folder in opened:
        plan = folder.read_plan()
        slos.update(plan.campaign.slos)
        for point in measured_points(folder):
            if len(machines) > 1:
                point.name = f"{point.machine}/{point.name}"
                point.baseline = f"{point.machine}/{point.baseline}" if point.baseline else None
            points.append(point)
    stated = clock({p.time_scale for p in points if p.levels})
    return decide(points, slos, clock=stated), points


# ---- the terminal ----------------------------------------------------------------------------
def render_terminal(decision: Decision, points: Sequence[PointLevels]) -> RenderableType:
    parts: list[RenderableType] = [_TableOrStacked(summary_table(decision, points))]
    for point in points:
        parts.append(Text(f"  {point.name}: {point.source}"))
    if decision.clock:
        parts.append(Text(f"time scale: {decision.clock}"))
    if decision.unranked:
        parts.append(Text(f"not ranked (no clock measured): {', '.join(decision.unranked)}"))
    for winner in decision.slo_winners:
        limits = ", ".join(f"{k} <= {v:g}" for k, v in winner.limits.items())
        if winner.point is None:
            parts.append(Text(f"SLO {winner.slo} ({limits}): no level of any point meets it"))
        else:
            parts.append(
                Text(
                    f"SLO {winner.slo} ({limits}): {winner.point} at c={winner.concurrency}, "
                    f"{winner.output_throughput_per_gpu:.1f} output tok/s per GPU"
                )
            )
        for name, bound in winner.highest_concurrency.items():
            if bound.meets_up_to is None:
                continue
            where = f"meets it up to c={bound.meets_up_to}"
            if bound.fails_from is not None and bound.estimate is not None:
                where += f", fails at c={bound.fails_from} (boundary ~{bound.estimate:.0f})"
            parts.append(Text(f"  {name}: {where}"))
    for cross in decision.crossovers:
        text = f"{cross.point} vs {cross.baseline}: {cross.verdict}"
        if cross.interval is not None:
            text += f" (95%: c {cross.interval[0]:.0f}-{cross.interval[1]:.0f})"
        parts.append(Text(text))
    if decision.frontier:
        best = ", ".join(
            f"{f.point}@c{f.concurrency} ({f.tok_s_per_user:.0f}/user, {f.tok_s_per_gpu:.0f}/GPU)"
            for f in decision.frontier
        )
        parts.append(Text(f"Pareto frontier (tok/s per user, per GPU): {best}"))
    return Group(*parts)


def summary_table(decision: Decision, points: Sequence[PointLevels]) -> Table:
    """Points as rows, concurrency as columns (output tok/s): * best in its column, ^ the
    point's peak."""
    table = Table(
        title="output tok/s by concurrency (* best there, ^ the point's peak)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 0, 0, 1),
    )
    table.add_column("point", overflow="fold", max_width=NAME_WIDTH)
    for c in decision.concurrencies:
        table.add_column(str(c), justify="right", no_wrap=True)
    for point in points:
        row = decision.table.get(point.name, {})
        cells = []
        for c in decision.concurrencies:
            value = row.get(c)
            if value is None:
                cells.append("-")
                continue
            mark = ("*" if decision.best.get(c) == point.name else "") + (
                "^" if decision.peak.get(point.name) == value else ""
            )
            cells.append(f"{value:.0f}{mark}")
        table.add_row(point.name, *cells)
    return table


class _TableOrStacked:
    """The summary table when every number fits whole beside a folded point name, else one
    block per point (repro.tables.stacked): never a number cut to fit."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        numbers = [
            max([len(str(col.header)), *(len(str(cell)) for cell in col._cells)]) + 1
            for col in self.table.columns[1:]
        ]
        if NAME_WIDTH + sum(numbers) <= options.max_width:
            for col, width in zip(self.table.columns[1:], numbers, strict=True):
                col.min_width = width - 1
            names = self.table.columns[0]
            longest = max((len(str(cell)) for cell in names._cells), default=0)
            names.min_width = names.max_width = max(
                NAME_WIDTH, min(longest, options.max_width - sum(numbers))
            )  # a name folds only when the numbers leave it no room
            if self.table.title:  # above the table, wrapped at the page's width, not the table's
                yield Text(str(self.table.title))
                self.table.title = None
            yield self.table
        else:
            yield stacked(self.table, console)


# ---- the HTML page -----------------------------------------------------------------------------
def write_html(folder: CampaignFolder, decision: Decision, points: Sequence[PointLevels]) -> Path:
    """`report/campaign.html` with the table, SLO winners, crossovers and two plots."""
    plots = _write_plots(folder.report_dir, decision, points)
    esc = html.escape
    head = "".join(f"<th>c={c}</th>" for c in decision.concurrencies)
    rows = []
    for point in points:
        row = decision.table.get(point.name, {})
        cells = []
        for c in decision.concurrencies:
            value = row.get(c)
            best = decision.best.get(c) == point.name
            text = "-" if value is None else f"{value:.0f}"
            cells.append(f"<td class={'best' if best else 'n'}>{text}</td>")
        rows.append(
            f"<tr><td>{esc(point.name)}</td>{''.join(cells)}<td>{esc(point.source)}</td></tr>"
        )
    slo_items = "".join(
        f"<li>{esc(w.slo)}: "
        + (
            f"{esc(w.point)} at c={w.concurrency}, {w.output_throughput_per_gpu:.1f} tok/s/GPU"
            if w.point
            else "no level meets it"
        )
        + "</li>"
        for w in decision.slo_winners
    )
    cross_items = "".join(
        f"<li>{esc(c.point)} vs {esc(c.baseline)}: {esc(c.verdict)}</li>"
        for c in decision.crossovers
    )
    images = "".join(f'<img src="{esc(p.name)}" alt="{esc(p.stem)}">' for p in plots)
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>campaign</title>
<style>body{{font-family:sans-serif;max-width:1240px;margin:1em auto}}
table{{border-collapse:collapse;table-layout:fixed;width:100%}}
td,th{{border:1px solid #ccc;padding:2px 4px;word-break:break-all}}
td.best{{font-weight:bold;background:#e6f4e6}} td.n{{text-align:right}}
img{{max-width:610px}}</style></head><body>
<h1>Campaign decision</h1>
<p>time scale: {esc(decision.clock)}</p>
<h2>Output tok/s by concurrency</h2><table><tr><th>point</th>{head}<th>source</th></tr>
{"".join(rows)}</table>
<h2>Winners under the SLOs</h2><ul>{slo_items or "<li>no SLO declared</li>"}</ul>
<h2>Speculation crossover</h2><ul>{cross_items or "<li>no drafter point</li>"}</ul>
<h2>Pareto frontier and speculation crossover</h2>{images}
</body></html>
"""
    return folder.write_report("campaign.html", page)


def _write_plots(out: Path, decision: Decision, points: Sequence[PointLevels]) -> list[Path]:
    import matplotlib  # deferred: matplotlib is slow to import

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    paths = []
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    ax.set_xlabel("output tok/s per user")
    ax.set_ylabel("output tok/s per GPU")
    for point in points:
        curve = [
            (lv.output_throughput_per_user, point.per_gpu(lv))
            for lv in point.valid()
            if lv.output_throughput_per_user is not None
        ]
        if curve:
            ax.plot(*zip(*curve, strict=True), marker="o", label=point.name[:40])
    frontier = [(f.tok_s_per_user, f.tok_s_per_gpu) for f in decision.frontier]
    if frontier:
        ax.plot(*zip(*frontier, strict=True), color="black", linestyle="--", label="frontier")
    paths.append(_saved(fig, ax, "Pareto frontier", out / "frontier.png"))
    if decision.crossovers:
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        for cross in decision.crossovers:
            xs = sorted(cross.speedups)
            ax.plot(xs, [cross.speedups[c] for c in xs], marker="o", label=cross.point[:40])
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("concurrency")
        ax.set_ylabel("speedup over the baseline")
        paths.append(_saved(fig, ax, "Speculation crossover", out / "crossover.png"))
    return paths


def _saved(fig: Any, ax: Any, title: str, path: Path) -> Path:
    """The figure with its title and legend, written as a PNG and closed."""
    from matplotlib import pyplot as plt

    ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
