"""What every report plot shares: a headless matplotlib figure, the concurrency axis, the
run's name with its SIMULATED mark, and the PNG bytes (stamped SIMULATED when a run was)."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from repro.report.records import LoadedRun
from repro.report.table import SIMULATED


def run_name(run: LoadedRun) -> str:
    return run.label + (f" ({SIMULATED})" if run.simulated else "")


def figure(height: float = 5.0) -> Figure:
    # Labels come from run records: drawn as the text they are (`$\frac{1}{$` is a name,
    # not mathtext to parse).
    matplotlib.rcParams["text.parse_math"] = False
    fig = Figure(figsize=(8, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def concurrency_axis(ax: Axes, runs: list[LoadedRun]) -> None:
    """A log2 concurrency axis ticked at the levels the runs measured."""
    ax.set_xscale("log", base=2)
    ticks = sorted({c for run in runs for c in run.concurrencies})
    if ticks:
        ax.set_xticks(ticks, [str(c) for c in ticks])
        ax.minorticks_off()


# The SIMULATED mark's corner: bottom right, below MARK_HEIGHT (a figure legend sits above).
MARK_HEIGHT = 0.04


def png(fig: Figure, runs: list[LoadedRun], layout: bool = True) -> bytes:
    if any(r.simulated for r in runs):
        fig.text(
            0.99,
            0.01,
            SIMULATED,
            ha="right",
            va="bottom",
            color="red",
            fontsize=12,
            fontweight="bold",
            alpha=0.8,
        )
    if layout:
        fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
