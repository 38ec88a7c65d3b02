"""One self-contained HTML page: the tables plus the plots embedded as base64 PNGs.

page = render_html(runs, baseline=base, metrics=["output_throughput", "ttft"])
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import jinja2
from markupsafe import Markup, escape

from repro.report.acceptance import accept_runs, acceptance_rows
from repro.report.accuracy import accuracy_rows, accuracy_runs
from repro.report.plots import all_plots
from repro.report.records import LoadedRun
from repro.report.table import best_header, build_report, caption, cell_text, fmt_value

T = TypeVar("T")

_TITLES = {
    "throughput": "Throughput vs concurrency",
    "pareto": "Per-user vs total throughput",
    "latency": "Latency percentiles vs concurrency",
    "speedup": "Speedup against the baseline",
    "acceptance": "Acceptance length per prompt set per drafter",
    "cost_pareto": "Tokens per dollar vs per-user speed",
}
LATENCY_TABLES = (("ttft", "TTFT"), ("itl", "ITL"), ("tpot", "TPOT"), ("e2e_latency", "E2E"))
PERCENTILES = ("p50", "p90", "p99")

LEVELS_PER_TABLE = 6  # level columns in one table: with the run and peak columns, 800 px


def breakable(name: str) -> Markup:
    """`name`, escaped, with a line-break opportunity after each `-`, `.`, `/` and `_`: a long
    name wraps between its parts, never inside one."""
    return Markup("<wbr>").join(escape(part) for part in re.split(r"(?<=[-./_])", name))


def marks_kept(cell: str) -> str:
    """A cell's text with its marks (`*` best, `!` invalid) held to the number they mark."""
    return cell.replace(" *", "\u00a0*").replace(" !", "\u00a0!")


def column_groups(columns: Sequence[T], per_table: int = LEVELS_PER_TABLE) -> list[list[T]]:
    """`columns` split into tables of at most `per_table`, as even as they go: a sweep of nine
    levels is two tables of five and four, not one wider than the page."""
    if not columns:
        return []
    tables = -(-len(columns) // per_table)
    size = -(-len(columns) // tables)
    return [list(columns[i : i + size]) for i in range(0, len(columns), size)]


def page_templates(folder: Path) -> jinja2.Environment:
    """The Jinja templates in `folder`, escaped, with the page filters (`breakable`,
    `marks_kept`): every HTML page of repro is made through one of these."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["breakable"] = breakable
    env.filters["marks_kept"] = marks_kept
    return env


_ENV = page_templates(Path(__file__).parent / "templates")


def mapping_text(data: dict[str, Any]) -> str:
    """`{'input_len': 128, 'dataset': None}` -> `input_len 128`: set keys only, no Python."""
    return ", ".join(f"{key} {value}" for key, value in data.items() if value not in (None, ""))


def render_html(
    runs: list[LoadedRun],
    baseline: LoadedRun | None = None,
    metrics: list[str] | tuple[str, ...] = ("output_throughput",),
    include_invalid: bool = False,
) -> str:
    """The page as a string; it references no file or URL outside itself."""
    swept = [r for r in runs if r.levels]  # accept runs have no sweep: their table is below
    tables = (
        [build_report(swept, metric, baseline, include_invalid) for metric in metrics]
        if swept
        else []
    )
    shown = list(runs)
    if baseline is not None and all(r.path.resolve() != baseline.path.resolve() for r in runs):
        shown.insert(0, baseline)
    images = [
        (name, _TITLES.get(name, name), base64.b64encode(png).decode("ascii"))
        for name, png in all_plots(shown, baseline).items()
    ]
    latency = (
        [
            (
                title,
                [
                    build_report(swept, f"{stat}_{key}", None, include_invalid)
                    for stat in PERCENTILES
                ],
            )
            for key, title in LATENCY_TABLES
        ]
        if swept
        else []
    )
    return _ENV.get_template("report.html.jinja").render(
        tables=tables,
        latency=latency,
        percentiles=PERCENTILES,
        acceptance=acceptance_rows(accept_runs(runs)),
        accuracy=accuracy_rows(accuracy_runs(runs)),
        images=images,
        runs=shown,
        simulated=any(r.simulated for r in shown),
        all_simulated=all(r.simulated for r in shown),
        best_header=best_header,
        as_text=mapping_text,
        generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        fmt=fmt_value,
        cell_text=cell_text,
        caption=caption,
        level_groups=column_groups,
    )
