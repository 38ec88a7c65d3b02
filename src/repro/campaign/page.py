"""`report/campaign.html`: the decision page of one or more campaign folders, and its plots.

It says what it is before any number: the campaigns, machines, dates, engines and time scale
the numbers come from, and SIMULATED (as the point reports do) when a simulator served them.
Then the table (concurrency columns in groups that fit an 800 px window), each point's source
with a failure's whole reason, each SLO's bounds, winner and per-point boundary, the acceptance
length of each drafter point per level, the crossovers and the two plots. Names wrap only
between their parts (after `-`, `.`, `/`, `_`), never inside a word.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from repro.campaign.decision import NOT_LOSSLESS, Decision, PointLevels, marked
from repro.campaign.folder import CampaignFolder
from repro.campaign.report import (
    LOSSLESS_RULE,
    NO_PRICE,
    boundary_text,
    cell,
    crossover_text,
    slo_bounds,
    slo_verdict,
)
from repro.fsutil import write_atomic
from repro.report.html import column_groups, page_templates
from repro.runfolder import fresh_run_dir

COLUMNS_PER_TABLE = 8  # concurrency columns in one table: more would not fit 800 px
PAGE_FILE = "campaign.html"
REPORTS_DIR = Path("runs") / "campaign-reports"  # pages over several campaigns
PLOT_SIZE = (7.6, 4.4)  # inches: at PLOT_DPI, 760 px, within the page at 800 px
PLOT_DPI = 100
LEGEND_CHAR_PT = 4.6  # the mean width of a character of the legend's 7 pt font
LEGEND_ROW_IN = 0.2  # inches one row of the legend takes below the axes

_ENV = page_templates(Path(__file__).parent / "templates")


def write_html(out: Path, decision: Decision, points: Sequence[PointLevels]) -> Path:
    """`campaign.html` and its plots in `out`: a campaign folder's report/ for its own
    decision, a folder of its own for several campaigns (never one campaign's page)."""
    plots = _write_plots(out, decision, points, any(p.simulated for p in points))
    page = render_page(decision, points, [p.name for p in plots])
    path = out / PAGE_FILE
    write_atomic(path, page)
    return path


def report_dir(folders: Sequence[Path], out: Path | None, base: Path = REPORTS_DIR) -> Path:
    """Where the page of `folders` goes: `out` when given; one campaign's own report/; for
    several, a new `runs/campaign-reports/<UTC>-<campaigns>/` under the current directory,
    so no campaign's own page is replaced."""
    if out is not None:
        return out
    if len(folders) == 1:
        return CampaignFolder.open(folders[0]).report_dir
    names = "+".join(CampaignFolder.open(f).read_plan().campaign.name for f in folders)
    return fresh_run_dir(base, names[:120])


def render_page(decision: Decision, points: Sequence[PointLevels], plots: Sequence[str]) -> str:
    """The page as a string; `plots` are file names beside it."""
    ran = [p for p in points if p.served_by]
    simulated = [p for p in ran if p.simulated]
    judged = any(point.valid() for point in points)
    return _ENV.get_template("campaign.html.jinja").render(
        title=" + ".join(_unique(p.campaign for p in points)) or "campaign",
        facts=_facts(points),
        simulated=bool(simulated),
        all_simulated=len(simulated) == len(ran),
        groups=column_groups(decision.concurrencies, COLUMNS_PER_TABLE),
        points=points,
        shown=lambda point: marked(point.name, point.diverges),
        not_lossless=NOT_LOSSLESS,
        cell=lambda point, c: cell(decision, point, c),
        best=lambda point, c: decision.best.get(c) == point,
        slos=[
            (
                w.slo,
                slo_bounds(w),
                slo_verdict(w, judged),
                _boundaries(w.highest_concurrency, decision.not_lossless),
            )
            for w in decision.slo_winners
        ],
        acceptance=_acceptance(points),
        costs=_costs(decision) if any(p.gpu_hour_usd for p in points) else [],
        no_price=NO_PRICE,
        lossless_rule=LOSSLESS_RULE,
        lossless=[
            (marked(p.name, p.diverges), p.lossless.baseline, p.lossless.verdict, p.diverges)
            for p in points
            if p.lossless is not None
        ],
        crossovers=[
            (marked(c.point, c.point in decision.not_lossless), c.baseline, crossover_text(c))
            for c in decision.crossovers
        ],
        plots=plots,
    )


def _unique(values: Any) -> list[str]:
    return list(dict.fromkeys(v for v in values if v))


def _facts(points: Sequence[PointLevels]) -> list[tuple[str, str]]:
    """What the numbers come from: campaigns, machines, when, what served them, on what clock."""
    started = sorted(p.started_at for p in points if p.started_at)
    dates = _unique(_utc(t) for t in (started[:1] + started[-1:]))
    scales = _unique(
        f"{p.time_scale:g} (every simulated duration x{p.time_scale:g})"
        if p.simulated and p.time_scale is not None
        else "real time"
        for p in points
        if p.served_by
    )
    return [
        ("campaign", ", ".join(_unique(p.campaign for p in points)) or "-"),
        ("machine", ", ".join(_unique(p.machine for p in points)) or "-"),
        ("date", " to ".join(dates) or "no point has run"),
        ("engine", "; ".join(_unique(p.served_by for p in points)) or "-"),
        ("time scale", ", ".join(scales) or "-"),
    ]


def _utc(stamp: str) -> str:
    """`2026-12-07T05:08:21Z` -> `2026-12-07 05:08 UTC`."""
    return stamp[:16].replace("T", " ") + " UTC"


def _costs(decision: Decision) -> list[tuple[str, list[list[str]]]]:
    """Per SLO, each point's row: rank, name, level, tok/s per GPU, $/GPU-hour and its
    source, $ per million output tokens (cheapest first)."""
    tables = []
    for cost in decision.cost:
        rows = []
        for rank, row in enumerate(cost.rows, 1):
            priced = row.usd_per_mtok is not None
            rows.append([
                str(rank) if priced else "-",
                marked(row.point, row.not_lossless),
                f"c={row.concurrency}" if row.concurrency is not None else "no level meets it",
                f"{row.tok_s_per_gpu:.1f}" if row.tok_s_per_gpu is not None else "-",
                f"${row.gpu_hour_usd:g} ({row.price_source})" if row.gpu_hour_usd else "no price",
                f"${row.usd_per_mtok:.2f}" if priced else "-",
            ])  # fmt: skip
        tables.append((cost.slo, rows))
    return tables


def _boundaries(bounds: dict[str, Any], diverging: Sequence[str]) -> list[tuple[str, str]]:
    return [
        (marked(name, name in diverging), boundary_text(b) or "no level meets it")
        for name, b in bounds.items()
    ]


def _acceptance(points: Sequence[PointLevels]) -> list[tuple[list[int], list[Any]]]:
    """Per drafter point, its mean acceptance length at each valid level, in column groups."""
    rows: list[tuple[str, dict[int, str]]] = []
    for point in points:
        if not point.drafter:
            continue
        by_c: dict[int, list[float]] = {}
        for level in point.valid():
            if level.accept_length is not None:
                by_c.setdefault(level.concurrency, []).append(level.accept_length)
        means = {c: f"{statistics.fmean(v):.2f}" for c, v in by_c.items()}
        rows.append((marked(point.name, point.diverges), means))
    levels = sorted({c for _, values in rows for c in values})
    return [
        (group, [(name, [values.get(c, "-") for c in group]) for name, values in rows])
        for group in column_groups(levels, COLUMNS_PER_TABLE)
    ]


# ---- the plots -------------------------------------------------------------------------------
def _write_plots(
    out: Path, decision: Decision, points: Sequence[PointLevels], simulated: bool
) -> list[Path]:
    """The frontier and crossover plots, titled SIMULATED when a simulator served a point."""
    import matplotlib  # deferred: matplotlib is slow to import

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.ticker import FixedLocator, NullLocator, StrMethodFormatter

    out.mkdir(parents=True, exist_ok=True)
    mark = " (SIMULATED)" if simulated else ""
    paths = []
    fig, ax = plt.subplots(figsize=PLOT_SIZE)
    ax.set_xlabel("output tok/s per user")
    ax.set_ylabel("output tok/s per GPU")
    for point in points:
        curve = [
            (lv.output_throughput_per_user, point.per_gpu(lv))
            for lv in point.valid()
            if lv.output_throughput_per_user is not None
        ]
        if curve:
            label = marked(point.name, point.diverges)
            ax.plot(*zip(*curve, strict=True), marker="o", label=label)
    frontier = [(f.tok_s_per_user, f.tok_s_per_gpu) for f in decision.frontier]
    if frontier:
        ax.plot(*zip(*frontier, strict=True), color="black", linestyle="--", label="frontier")
        for f in decision.frontier:  # each frontier dot names its concurrency
            ax.annotate(
                f"c={f.concurrency}",
                (f.tok_s_per_user, f.tok_s_per_gpu),
                textcoords="offset points",
                xytext=(4, 4),
                fontsize=7,
            )
    paths.append(_saved(fig, ax, f"Pareto frontier{mark}", out / "frontier.png"))
    if decision.crossovers:
        fig, ax = plt.subplots(figsize=PLOT_SIZE)
        measured: set[int] = set()
        for cross in decision.crossovers:
            xs = sorted(cross.speedups)
            measured.update(xs)
            label = marked(cross.point, cross.point in decision.not_lossless)
            ax.plot(xs, [cross.speedups[c] for c in xs], marker="o", label=label)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xscale("log", base=2)  # the ticks are the levels measured, as users name them
        ax.xaxis.set_major_locator(FixedLocator(sorted(measured)))
        ax.xaxis.set_major_formatter(StrMethodFormatter("{x:.0f}"))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("concurrency (requests in flight)")
        ax.set_ylabel("speedup over the baseline")
        paths.append(_saved(fig, ax, f"Speculation crossover{mark}", out / "crossover.png"))
    return paths


def _saved(fig: Any, ax: Any, title: str, path: Path) -> Path:
    """The figure with its title, and its legend below the axes (names whole, never over the
    curves, in as many columns as fit the width), written as a PNG and closed."""
    from matplotlib import pyplot as plt

    ax.set_title(title)
    ax.margins(x=0.08, y=0.08)  # room for the dots' labels inside the axes
    handles, labels = ax.get_legend_handles_labels()
    rows = 0
    if labels:
        width_chars = PLOT_SIZE[0] * 72 / LEGEND_CHAR_PT  # characters across at the font size
        ncol = max(1, min(len(labels), int(width_chars // (max(map(len, labels)) + 6))))
        rows = -(-len(labels) // ncol)
        fig.set_figheight(PLOT_SIZE[1] + rows * LEGEND_ROW_IN)
        fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, rows * LEGEND_ROW_IN / fig.get_figheight(), 1, 1))
    fig.savefig(path, dpi=PLOT_DPI)
    plt.close(fig)
    return path
