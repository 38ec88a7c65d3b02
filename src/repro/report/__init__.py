"""Reports from run records: the summary table, comparisons, plots and an HTML page.

runs = load_runs(["runs/a", "runs/b"])
report = build_report(runs, "output_throughput", baseline=runs[0])
render_markdown(report); render_rich(report); report_to_json(report)
cmp = compare_runs(runs[0], runs[1]); render_comparison(cmp)
render_html(runs, baseline=runs[0])
"""

from __future__ import annotations

from repro.report.compare import (
    Comparison,
    FingerprintRow,
    PointDelta,
    compare_runs,
    comparison_to_json,
    render_comparison,
)
from repro.report.html import render_html
from repro.report.plots import all_plots, plot_acceptance, plot_pareto, plot_throughput, write_plots
from repro.report.records import METRICS, LoadedRun, Point, load_run, load_runs
from repro.report.table import (
    SIMULATED,
    Cell,
    Report,
    ReportRow,
    build_report,
    render_markdown,
    render_rich,
    report_to_json,
)
from repro.runfolder import RunRecordError

__all__ = [
    "METRICS",
    "SIMULATED",
    "Cell",
    "Comparison",
    "FingerprintRow",
    "LoadedRun",
    "Point",
    "PointDelta",
    "Report",
    "ReportRow",
    "RunRecordError",
    "all_plots",
    "build_report",
    "compare_runs",
    "comparison_to_json",
    "load_run",
    "load_runs",
    "plot_acceptance",
    "plot_pareto",
    "plot_throughput",
    "render_comparison",
    "render_html",
    "render_markdown",
    "render_rich",
    "report_to_json",
    "write_plots",
]
