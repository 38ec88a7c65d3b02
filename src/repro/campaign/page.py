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

from repro.campaign.decision import Decision, PointLevels
from repro.campaign.folder import CampaignFolder
from repro.campaign.report import (
    boundary_text,
    cell,
    crossover_text,
    slo_bounds,
    slo_verdict,
)
from repro.report.html import column_groups, page_templates

COLUMNS_PER_TABLE = 8  # concurrency columns in one table: more would not fit 800 px
PAGE_FILE = "campaign.html"

_ENV = page_templates(Path(__file__).parent / "templates")


def write_html(folder: CampaignFolder, decision: Decision, points: Sequence[PointLevels]) -> Path:
    """`report/campaign.html` and its plots, in the (first) campaign folder's report/."""
    plots = _write_plots(folder.report_dir, decision, points, any(p.simulated for p in points))
    page = render_page(decision, points, [p.name for p in plots])
    return folder.write_report(PAGE_FILE, page)


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
        cell=lambda point, c: cell(decision, point, c),
        best=lambda point, c: decision.best.get(c) == point,
        slos=[
            (w.slo, slo_bounds(w), slo_verdict(w, judged), _boundaries(w.highest_concurrency))
            for w in decision.slo_winners
        ],
        acceptance=_acceptance(points),
        crossovers=[(c.point, c.baseline, crossover_text(c)) for c in decision.crossovers],
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


def _boundaries(bounds: dict[str, Any]) -> list[tuple[str, str]]:
    return [(name, boundary_text(b) or "no level meets it") for name, b in bounds.items()]


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
        rows.append((point.name, {c: f"{statistics.fmean(v):.2f}" for c, v in by_c.items()}))
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
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        measured: set[int] = set()
        for cross in decision.crossovers:
            xs = sorted(cross.speedups)
            measured.update(xs)
            ax.plot(xs, [cross.speedups[c] for c in xs], marker="o", label=cross.point[:40])
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
    """The figure with its title and legend, written as a PNG and closed."""
    from matplotlib import pyplot as plt

    ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
