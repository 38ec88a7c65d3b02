"""The summary table: one row per run, one column per level (c=4, r=4/s, trace 1x), best
marked, vs baseline.

report = build_report(runs, metric="output_throughput", baseline=base_run)
render_markdown(report) / render_rich(report) / report_to_json(report)

Cells, best marks, peaks and speedups come from valid levels only; a level whose repeats
are all invalid shows `invalid` (the reasons are in the JSON). With `include_invalid`, invalid
levels count too and their cells are marked `!`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field
from rich.table import Table
from rich.text import Text

from repro.errors import ReproError
from repro.report.records import METRICS, LoadedRun, MetricInfo
from repro.report.timescale import require_one_time_scale

SIMULATED = "SIMULATED"
INVALID_MARK = "!"


class Cell(BaseModel):
    """One run at one level (a concurrency, a rate, a trace speed-up)."""

    value: float | None = None
    low: float | None = None
    high: float | None = None
    repeats: int = 0
    best: bool = False
    speedup: float | None = Field(default=None, description="vs the baseline; >1 is better")
    invalid: bool = Field(default=False, description="the value includes invalid levels")
    reasons: list[str] = Field(default_factory=list, description="why levels here are invalid")
    interval: tuple[float, float] | None = Field(
        default=None, description="95% bootstrap interval of a single repeat, when recorded"
    )

    def band(self) -> tuple[float, float] | None:
        """The values this cell cannot be told apart from: its repeats' range, widened by the
        bootstrap interval of a single repeat."""
        if self.value is None or self.low is None or self.high is None:
            return None
        if self.interval is not None:
            return min(self.low, self.interval[0]), max(self.high, self.interval[1])
        return self.low, self.high


class ReportRow(BaseModel):
    label: str
    run_id: str
    recipe: str
    machine_class: str
    image_digest: str
    simulated: bool
    status: str
    forced: str | None = None  # `forced 4`: acceptance forced by SGLANG_SIMULATE_ACC_LEN
    is_baseline: bool = False
    cells: dict[str, Cell] = Field(description="by level label: c=4, r=4/s, trace 1x")
    peak: float | None = None
    peak_level: str | None = None
    peak_speedup: float | None = None


class Report(BaseModel):
    metric: MetricInfo
    levels: list[str] = Field(description="the columns' level labels, in order")
    rows: list[ReportRow]
    baseline: str | None = None  # label of the baseline row
    include_invalid: bool = False

    @property
    def any_simulated(self) -> bool:
        return any(r.simulated for r in self.rows)

    @property
    def any_invalid(self) -> bool:
        return any(cell.reasons for r in self.rows for cell in r.cells.values())


def _better(metric: MetricInfo, a: float, b: float) -> bool:
    return a > b if metric.higher_is_better else a < b


def _speedup(metric: MetricInfo, value: float | None, base: float | None) -> float | None:
    """Ratio where >1 means better than the baseline, for either direction of metric."""
    if value is None or base is None or value == 0 or base == 0:
        return None
    return value / base if metric.higher_is_better else base / value


def build_report(
    runs: list[LoadedRun],
    metric: str = "output_throughput",
    baseline: LoadedRun | None = None,
    include_invalid: bool = False,
) -> Report:
    """The table model. `baseline` is one of `runs` or an extra run shown as the first row;
    invalid levels are left out of every number unless `include_invalid`."""
    if metric not in METRICS:
        raise ReproError(
            f"unknown metric {metric!r}", hint=f"choose one of {', '.join(sorted(METRICS))}"
        )
    if not runs and baseline is None:
        raise ReproError("no runs to report", hint="pass one or more run record folders")
    info = METRICS[metric]
    all_runs = list(runs)
    if baseline is not None and all(r.path.resolve() != baseline.path.resolve() for r in runs):
        all_runs.insert(0, baseline)
    require_one_time_scale(all_runs)
    loads = sorted({load for r in all_runs for load in r.loads})
    rows: list[ReportRow] = []
    base_points = baseline.points(metric, include_invalid) if baseline is not None else {}
    for run in all_runs:
        points = run.points(metric, include_invalid)
        reasons = run.invalid_reasons()
        cells: dict[str, Cell] = {}
        for c in loads:
            p = points.get(c)
            cell = (
                Cell()
                if p is None
                else Cell(
                    value=p.mean,
                    low=p.low,
                    high=p.high,
                    repeats=p.repeats,
                    invalid=p.invalid > 0,
                    interval=p.intervals[0] if len(p.intervals) == 1 else None,
                )
            )
            cell.reasons = reasons.get(c, [])
            if baseline is not None and p is not None and c in base_points:
                cell.speedup = _speedup(info, p.mean, base_points[c].mean)
            cells[c.label] = cell
        peak_c: str | None = None
        for label, cell in cells.items():
            if cell.value is not None and (
                peak_c is None or _better(info, cell.value, cells[peak_c].value or 0.0)
            ):
                peak_c = label
        is_base = baseline is not None and run.path.resolve() == baseline.path.resolve()
        rows.append(
            ReportRow(
                label=run.label,
                run_id=run.run_id,
                recipe=run.recipe_name,
                machine_class=run.machine_class,
                image_digest=run.image_digest_short,
                simulated=run.simulated,
                status=run.run.status,
                forced=run.forced.label() if run.forced else None,
                is_baseline=is_base,
                cells=cells,
                peak=cells[peak_c].value if peak_c is not None else None,
                peak_level=peak_c,
            )
        )
    if baseline is not None:
        base_row = next(r for r in rows if r.is_baseline)
        for row in rows:
            row.peak_speedup = _speedup(info, row.peak, base_row.peak)
    for c in loads:
        _mark_best(info, [r.cells[c.label] for r in rows])
    return Report(
        metric=info,
        levels=[c.label for c in loads],
        rows=rows,
        baseline=next((r.label for r in rows if r.is_baseline), None),
        include_invalid=include_invalid,
    )


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def _mark_best(info: MetricInfo, cells: list[Cell]) -> None:
    """Mark the best cell, and every cell that cannot be told apart from it (bands overlap, or
    within 0.05%): a tie within noise is not a win."""
    measured = [cell for cell in cells if cell.value is not None]
    if len(measured) < 2:
        return
    best = (max if info.higher_is_better else min)(measured, key=lambda cell: cell.value or 0.0)
    top, top_band = best.value or 0.0, best.band()
    for cell in measured:
        value, band = cell.value or 0.0, cell.band()
        close = abs(value - top) <= 5e-4 * max(abs(top), 1e-12)
        overlap = band is not None and top_band is not None and _overlap(band, top_band)
        cell.best = cell is best or close or overlap


def fmt_value(value: float | None, metric: MetricInfo) -> str:
    if value is None:
        return "-"
    if metric.unit == "tok/step" or abs(value) < 10:
        return f"{value:.2f}"
    return f"{value:.1f}" if value < 1000 else f"{value:.0f}"


def best_header(metric: MetricInfo) -> str:
    """The column of each run's best value: its peak, or for latencies its minimum."""
    return "peak" if metric.higher_is_better else "min"


def fmt_speedup(speedup: float | None) -> str:
    return "" if speedup is None else f"{speedup:.2f}x"


def row_title(row: ReportRow) -> str:
    tags = []
    if row.simulated:
        tags.append(SIMULATED)
    if row.is_baseline:
        tags.append("baseline")
    if row.status != "complete":
        tags.append(row.status)
    return row.label + (f" [{', '.join(tags)}]" if tags else "")


def cell_text(cell: Cell, metric: MetricInfo, with_speedup: bool) -> str:
    if cell.value is None and cell.reasons:
        return "invalid"
    text = fmt_value(cell.value, metric)
    if cell.invalid:
        text += f" {INVALID_MARK}"
    if cell.best:
        text += " *"
    if with_speedup and cell.speedup is not None:
        text += f" ({fmt_speedup(cell.speedup)})"
    return text


def caption(report: Report) -> str:
    m = report.metric
    better = "higher" if m.higher_is_better else "lower"
    parts = [
        f"{m.label} ({m.unit}, {better} is better) by level; "
        "* best per column (ties within noise share it)"
    ]
    if report.baseline:
        parts.append(f"(Nx) speedup vs baseline {report.baseline}")
    if report.include_invalid:
        parts.append(f"{INVALID_MARK}: includes levels whose validity verdict failed")
    elif report.any_invalid:
        parts.append("invalid levels are left out (--include-invalid to show them)")
    if report.any_simulated:
        parts.append(f"{SIMULATED}: numbers come from the CPU simulator, not a GPU server")
    return "; ".join(parts)


def render_markdown(report: Report) -> str:
    with_speedup = report.baseline is not None
    head = [
        "run",
        "machine",
        "image",
        *report.levels,
        best_header(report.metric),
    ]
    lines = [
        f"**{report.metric.label}** ({report.metric.unit})"
        + (f" — **{SIMULATED}**" if report.any_simulated else ""),
        "",
        "| " + " | ".join(head) + " |",
        "| " + " | ".join(["---"] * 3 + ["---:"] * (len(head) - 3)) + " |",
    ]
    for row in report.rows:
        cells = []
        for c in report.levels:
            text = cell_text(row.cells[c], report.metric, with_speedup)
            cells.append(f"**{text}**" if row.cells[c].best else text)
        peak = fmt_value(row.peak, report.metric)
        if row.peak is not None:
            peak += f" @{row.peak_level}"
            if with_speedup and row.peak_speedup is not None:
                peak += f" ({fmt_speedup(row.peak_speedup)})"
        title = row_title(row).replace("|", "\\|")
        lines.append(
            "| "
            + " | ".join([title, row.machine_class, f"`{row.image_digest}`", *cells, peak])
            + " |"
        )
    lines += ["", f"_{caption(report)}_", ""]
    return "\n".join(lines)


def render_rich(report: Report) -> Table:
    with_speedup = report.baseline is not None
    title = f"{report.metric.label} ({report.metric.unit})"
    if report.any_simulated:
        title += f"  [bold red]{SIMULATED}[/]"
    table = Table(title=title, caption=caption(report), caption_justify="left")
    table.add_column("run")
    table.add_column("machine")
    table.add_column("image")
    for c in report.levels:
        table.add_column(c, justify="right")
    table.add_column(best_header(report.metric), justify="right")
    for row in report.rows:
        cells: list[Text | str] = []
        for c in report.levels:
            text = cell_text(row.cells[c], report.metric, with_speedup)
            cells.append(Text(text, style="bold green") if row.cells[c].best else text)
        peak = fmt_value(row.peak, report.metric)
        if row.peak is not None:
            peak += f" @{row.peak_level}"
            if with_speedup and row.peak_speedup is not None:
                peak += f" ({fmt_speedup(row.peak_speedup)})"
        name = Text(row.label)
        if row.simulated:
            name.append(f" {SIMULATED}", style="bold red")
        if row.is_baseline:
            name.append(" baseline", style="cyan")
        if row.status != "complete":
            name.append(f" {row.status}", style="yellow")
        table.add_row(name, row.machine_class, row.image_digest, *cells, peak)
    return table


def report_to_json(report: Report) -> dict[str, Any]:
    data = report.model_dump(mode="json")
    data["simulated"] = report.any_simulated
    data["caption"] = caption(report)
    for row in data["rows"]:
        if row["simulated"]:
            row["marker"] = SIMULATED
    return data
