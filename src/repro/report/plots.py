"""PNG plots of run records (matplotlib, Agg backend; no display needed).

png = plot_throughput(runs)        # output tok/s vs concurrency, one line per run
png = plot_pareto(runs)            # per-user tok/s vs total tok/s, points labelled by c
png = plot_acceptance(runs)        # acceptance per prompt set per drafter, 95% bars, or None
write_plots(runs, out_dir, base)   # all of them (latency_plots' too) as files; the paths
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.axes import Axes

from repro.fsutil import write_atomic
from repro.report.figures import concurrency_axis, figure, png, run_name
from repro.report.labels import shortened
from repro.report.latency_plots import plot_latency, plot_speedup
from repro.report.records import LoadedRun
from repro.report.timescale import require_one_time_scale
from repro.schema.level import Load


def plot_throughput(runs: list[LoadedRun]) -> bytes:
    """Output tok/s vs concurrency (log2 x axis), one line per run, min-max band from repeats."""
    fig = figure()
    ax = fig.add_subplot(1, 1, 1)
    for run in runs:
        points = run.points("output_throughput")
        if not points:
            continue
        cs = sorted(points)
        xs = [c.value for c in cs]
        (line,) = ax.plot(xs, [points[c].mean for c in cs], marker="o", label=run_name(run))
        if any(points[c].repeats > 1 for c in cs):
            ax.fill_between(
                xs,
                [points[c].low for c in cs],
                [points[c].high for c in cs],
                color=line.get_color(),
                alpha=0.2,
            )
    concurrency_axis(ax, runs)
    ax.set_ylabel("output throughput (tok/s)")
    ax.set_title(f"Throughput vs {ax.get_xlabel()}")
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    return png(fig, runs)


def plot_pareto(runs: list[LoadedRun]) -> bytes:
    """Per-user tok/s (y) vs total output tok/s (x): each run's front, points labelled c=N."""
    fig = figure()
    ax = fig.add_subplot(1, 1, 1)
    fronts: list[tuple[list[Load], list[float], list[float]]] = []
    for run in runs:
        total = run.points("output_throughput")
        per_user = run.points("output_throughput_per_user")
        cs = sorted(set(total) & set(per_user))
        if not cs:
            continue
        xs = [total[c].mean for c in cs]
        ys = [per_user[c].mean for c in cs]
        ax.plot(xs, ys, marker="o", label=run_name(run))
        fronts.append((cs, xs, ys))
    _label_levels(ax, fronts)
    ax.set_xlabel("total output throughput (tok/s)")
    ax.set_ylabel("per-user output throughput (tok/s)")
    ax.set_title("Per-user vs total throughput (up and right is better)")
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    return png(fig, runs)


LABEL_GAP_PX = 28
"""A level's `c=N` label is left out when it would sit this close to one already drawn."""


def _label_levels(ax: Axes, fronts: list[tuple[list[Load], list[float], list[float]]]) -> None:
    """`c=N` beside each point, skipping those that would overlap a label already placed."""
    ax.autoscale_view()
    placed: list[tuple[float, float]] = []
    for cs, xs, ys in fronts:
        for c, x, y in zip(cs, xs, ys, strict=True):
            px, py = ax.transData.transform((x, y))
            if all(abs(px - qx) + abs(py - qy) > LABEL_GAP_PX for qx, qy in placed):
                placed.append((px, py))
                ax.annotate(c.label, (x, y), textcoords="offset points", xytext=(4, 4),
                            fontsize=7)  # fmt: skip


def plot_cost_pareto(runs: list[LoadedRun]) -> bytes | None:
    """Output tokens per dollar (y) vs per-user tok/s (x), InferenceX's headline view: each
    run's front, points labelled c=N; None when no run has a GPU-hour price."""
    fig = figure()
    ax = fig.add_subplot(1, 1, 1)
    for run in runs:
        cost = run.points("usd_per_mtok")
        per_user = run.points("output_throughput_per_user")
        cs = sorted(c for c in set(cost) & set(per_user) if cost[c].mean > 0)
        if not cs:
            continue
        xs = [per_user[c].mean for c in cs]
        ys = [1e6 / cost[c].mean for c in cs]
        ax.plot(xs, ys, marker="o", label=run_name(run))
        for c, x, y in zip(cs, xs, ys, strict=True):
            ax.annotate(c.label, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    if not ax.get_legend_handles_labels()[0]:
        return None
    ax.set_xlabel("per-user output throughput (tok/s)")
    ax.set_ylabel("output tokens per dollar")
    ax.set_title("Tokens per dollar vs per-user speed (up and right is better)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return png(fig, runs)


def drafter_label(run: LoadedRun) -> str:
    drafter = run.recipe.drafter
    return shortened((drafter.repo if drafter else None) or run.label)


def _ci_errors(sets: list[Any], heights: list[float]) -> list[list[float]]:
    """Below and above each bar, its pooled acceptance's 95% interval (0 where none)."""
    below, above = [], []
    for entry, height in zip(sets, heights, strict=True):
        ci = getattr(entry, "accept_length_ci95", None)
        below.append(max(0.0, height - ci.low) if ci is not None else 0.0)
        above.append(max(0.0, ci.high - height) if ci is not None else 0.0)
    return [below, above]


def plot_acceptance(runs: list[LoadedRun]) -> bytes | None:
    """Grouped bars: acceptance length per prompt set, one bar per run's drafter; None if none."""
    with_accept = [r for r in runs if r.accept is not None and r.accept.sets]
    if not with_accept:
        return None
    sets = sorted({s.prompt_set for r in with_accept for s in r.accept.sets})  # type: ignore[union-attr]
    fig = figure()
    ax = fig.add_subplot(1, 1, 1)
    width = 0.8 / len(with_accept)
    for i, run in enumerate(with_accept):
        assert run.accept is not None
        by_set = {s.prompt_set: s for s in run.accept.sets}
        xs = [j + i * width - 0.4 + width / 2 for j in range(len(sets))]
        heights = [(by_set[s].accept_length or 0.0) if s in by_set else 0.0 for s in sets]
        errors = _ci_errors([by_set.get(s) for s in sets], heights)
        label = drafter_label(run)
        if label != run.label:
            label = f"{label} [{run.label}]"
        bars = ax.bar(
            xs,
            heights,
            width=width,
            yerr=errors,
            capsize=3,
            label=label + (" (SIM)" if run.simulated else ""),
        )
        ax.bar_label(bars, fmt="%.2f", fontsize=7, padding=2)
    ax.set_xticks(range(len(sets)))
    ax.set_xticklabels([shortened(s, 24) for s in sets])
    ax.set_ylabel("acceptance length (tokens per verify step)")
    ax.set_title("Acceptance length per prompt set per drafter (bars: 95% interval)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return png(fig, runs)


def all_plots(runs: list[LoadedRun], baseline: LoadedRun | None = None) -> dict[str, bytes]:
    """name -> PNG bytes for every plot that has data (the speedup plot with a baseline)."""
    require_one_time_scale([r for r in runs if r.levels])
    plots = {"throughput": plot_throughput(runs), "pareto": plot_pareto(runs)}
    for name, extra in (("latency", plot_latency(runs)), ("speedup", plot_speedup(runs, baseline))):
        if extra is not None:
            plots[name] = extra
    accept = plot_acceptance(runs)
    if accept is not None:
        plots["acceptance"] = accept
    cost = plot_cost_pareto(runs)
    if cost is not None:
        plots["cost_pareto"] = cost
    return plots


def write_plots(
    runs: list[LoadedRun], out_dir: str | Path, baseline: LoadedRun | None = None
) -> list[Path]:
    plots = all_plots(runs, baseline)  # before the folder: a refusal leaves nothing
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in plots.items():
        path = out / f"{name}.png"
        write_atomic(path, data)
        paths.append(path)
    return paths
