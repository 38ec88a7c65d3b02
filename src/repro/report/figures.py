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
from repro.schema.level import Load


def run_name(run: LoadedRun) -> str:
    return run.label + (f" ({SIMULATED})" if run.simulated else "")


def figure(height: float = 5.0) -> Figure:
    # Labels come from run records: drawn as the text they are (`$\frac{1}{$` is a name,
    # not mathtext to parse).
    matplotlib.rcParams["text.parse_math"] = False
    fig = Figure(figsize=(8, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


AXIS_TITLES = {"c": "concurrency", "rate": "request rate (req/s)", "trace": "trace speed-up"}


def concurrency_axis(ax: Axes, runs: list[LoadedRun]) -> None:
    """A log2 axis of the levels the runs measured (concurrencies, request rates or trace
    speed-ups: a level is drawn at its number), ticked and titled by what they are."""
    ax.set_xscale("log", base=2)
    loads = sorted({load for run in runs for load in run.loads})
    kinds = {load.kind for load in loads}
    ax.set_xlabel(AXIS_TITLES[next(iter(kinds))] if len(kinds) == 1 else "level")
    if loads:
        ax.set_xticks([load.value for load in loads], [_tick(load) for load in loads])
        ax.minorticks_off()


def _tick(load: Load) -> str:
    label = load.label
    return label.removeprefix("c=") if load.kind == "c" else label


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
