"""PNG plots of latency and of speedup against a baseline (matplotlib, Agg backend).

png = plot_latency(runs)             # TTFT, ITL, TPOT, E2E: p50 / p90 / p99 vs concurrency
png = plot_speedup(runs, baseline)   # output tok/s of each run / the baseline's, per level
"""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from repro.report.figures import MARK_HEIGHT, concurrency_axis, figure, png, run_name
from repro.report.records import LoadedRun

LATENCIES = (("ttft", "TTFT"), ("itl", "ITL"), ("tpot", "TPOT"), ("e2e_latency", "E2E latency"))
PERCENTILES = (("p50", "-"), ("p90", "--"), ("p99", ":"))


def plot_latency(runs: list[LoadedRun]) -> bytes | None:
    """One panel per latency (ms, from 0): each run's p50 solid, p90 dashed, p99 dotted;
    None when no run has latencies."""
    swept = [r for r in runs if r.levels]
    fig = latency_figure(swept)
    return None if fig is None else png(fig, swept, layout=False)


def latency_figure(swept: list[LoadedRun]) -> Figure | None:
    """The latency panels with their legend below, above the SIMULATED mark's corner."""
    if not swept:
        return None
    fig = figure(height=7.5)
    axes: list[Axes] = [fig.add_subplot(2, 2, i + 1) for i in range(len(LATENCIES))]
    colors = [f"C{i % 10}" for i in range(len(swept))]
    drawn = False
    for ax, (key, title) in zip(axes, LATENCIES, strict=True):
        for run, color in zip(swept, colors, strict=True):
            for stat, style in PERCENTILES:
                points = run.points(f"{stat}_{key}")
                cs = sorted(c for c in points if points[c].mean > 0)
                if not cs:
                    continue
                drawn = True
                label = f"{run_name(run)} {stat}" if ax is axes[0] else None
                ax.plot([c.value for c in cs], [points[c].mean for c in cs], style,
                        color=color, marker=".", label=label)  # fmt: skip
        ax.set_ylim(bottom=0)
        ax.set_title(f"{title} (ms)", fontsize=10)
        concurrency_axis(ax, swept)
        ax.grid(True, alpha=0.3)
    if not drawn:
        return None
    handles, labels = axes[0].get_legend_handles_labels()
    longest = max(len(label) for label in labels)
    ncol = min(len(labels), 3 if longest <= 36 else 2 if longest <= 56 else 1)  # fit 8 inches
    fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, MARK_HEIGHT),
               ncol=ncol, fontsize=7)  # fmt: skip
    fig.suptitle("Latency percentiles vs concurrency (p50 solid, p90 dashed, p99 dotted)")
    rows = -(-len(labels) // ncol)
    fig.tight_layout(rect=(0, MARK_HEIGHT + 0.025 + 0.025 * rows, 1, 0.96))
    return fig


def plot_speedup(runs: list[LoadedRun], baseline: LoadedRun | None) -> bytes | None:
    """Output throughput of each run over the baseline's, per concurrency both measured;
    None without a baseline or another run."""
    if baseline is None:
        return None
    base = baseline.points("output_throughput")
    others = [r for r in runs if r.levels and r.path.resolve() != baseline.path.resolve()]
    fig = figure()
    ax = fig.add_subplot(1, 1, 1)
    for run in others:
        points = run.points("output_throughput")
        cs = sorted(c for c in set(points) & set(base) if base[c].mean > 0)
        if cs:
            ax.plot([c.value for c in cs], [points[c].mean / base[c].mean for c in cs], marker="o",
                    label=run_name(run))  # fmt: skip
    if not ax.get_legend_handles_labels()[0]:
        return None
    ax.axhline(1.0, color="gray", linewidth=1)
    concurrency_axis(ax, [*others, baseline])
    ax.set_ylabel(f"output throughput / {run_name(baseline)}")
    ax.set_title("Speedup against the baseline (above 1 is faster)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return png(fig, [*others, baseline])
