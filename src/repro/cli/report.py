"""`repro report RUN...` and `repro compare A B`: tables, plots and pages from run records."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from repro.cli.options import json_option
from repro.errors import ReproError
from repro.fsutil import write_atomic
from repro.report import (
    METRICS,
    build_report,
    compare_runs,
    comparison_to_json,
    load_runs,
    render_comparison,
    render_html,
    render_markdown,
    render_rich,
    report_to_json,
    write_plots,
)
from repro.report.acceptance import (
    accept_runs,
    acceptance_comparison_table,
    acceptance_table,
    acceptance_to_json,
    compare_acceptance,
)
from repro.report.accuracy import (
    accuracy_runs,
    accuracy_to_json,
    compare_accuracy,
    comparison_table,
    report_table,
)
from repro.report.compare import DEFAULT_METRICS
from repro.report.records import LoadedRun
from repro.schema.accuracy import AccuracyCheck
from repro.tables import fit

_METRIC = click.Choice(sorted(METRICS))
_METRICS_HELP = (
    "output_throughput and the other rates, accept_length, joules_per_token, power, "
    "usd_per_mtok, and mean_/p50_/p90_/p99_ of ttft, itl, tpot, e2e_latency, chunk_gap (ttft "
    "alone: the mean); docs/comparing.md lists them"
)


def _write(text: str, output: Path | None) -> None:
    if output is None:
        click.echo(text, nl=not text.endswith("\n"))
        return
    write_atomic(output, text)
    click.echo(f"wrote {output}", err=True)


def _against_plan_is_campaigns(ctx: click.Context, _param: click.Parameter, given: bool) -> None:
    """`--against-plan` belongs to `repro campaign report`: said so, not click's bare "No
    such option" (the plan is a campaign's, a run folder has none)."""
    if given:
        raise click.UsageError(
            "--against-plan is an option of `repro campaign report` (a campaign's\n"
            "measured levels beside its plan's): repro campaign report FOLDER --against-plan",
            ctx=ctx,
        )


@click.command("report")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--against-plan",
    is_flag=True,
    hidden=True,
    expose_value=False,
    is_eager=True,
    callback=_against_plan_is_campaigns,
)
@click.option("--baseline", type=click.Path(path_type=Path), help="Run to compute speedups vs.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "markdown", "json", "html"]),
    default="table",
    show_default=True,
)
@click.option(
    "--metric",
    "metrics",
    type=_METRIC,
    metavar="METRIC",
    multiple=True,
    help=f"Metric per table (repeatable; default output_throughput): {_METRICS_HELP}.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path),
    help="Write to this file (html: report.html).",
)
@click.option("--plots", type=click.Path(path_type=Path), help="Also write the PNG plots here.")
@click.option(
    "--include-invalid",
    is_flag=True,
    help="Count levels whose validity verdict failed in values, best and speedups (marked !).",
)
def report(
    runs: tuple[Path, ...],
    baseline: Path | None,
    fmt: str,
    metrics: tuple[str, ...],
    output: Path | None,
    plots: Path | None,
    include_invalid: bool,
) -> None:
    """One row per run, one column per concurrency; best per column marked (*).

    RUNS are folders printed by `repro run` (their bench/ and accept/ parts are read) or
    written by `repro bench`. Runs of one recipe are told apart by start time, then machine or
    simulator profile. Narrow terminals get a stacked layout rather than cut numbers.

    With --baseline RUN each cell also shows the speedup vs that run (e.g. kimi26-ep4-dflash
    vs kimi26-ep4). Runs from the simulator are marked SIMULATED in every format. Levels whose
    validity verdict failed are left out of values, best marks and speedups (shown as
    `invalid`) unless --include-invalid.
    """
    # loaded together so that labels are unique across the runs and the baseline
    loaded = load_runs([*runs, *([baseline] if baseline is not None else [])])
    records = loaded[: len(runs)]
    base = loaded[-1] if baseline is not None else None
    chosen = list(metrics) or ["output_throughput"]
    if plots is not None:
        same = base is not None and any(r.path.resolve() == base.path.resolve() for r in records)
        shown = records if base is None or same else [base, *records]  # the baseline once
        for path in write_plots(shown, plots, base):
            click.echo(f"wrote {path}", err=True)
    if fmt == "html":
        _write(render_html(records, base, chosen, include_invalid), output or Path("report.html"))
        return
    swept = [r for r in records if r.levels]  # accept runs have no concurrency sweep
    accepted = accept_runs(records)
    scored = accuracy_runs(records)
    if not swept and not accepted:
        raise click.UsageError("these runs hold neither a concurrency sweep nor acceptance results")
    reports = [build_report(swept, m, base, include_invalid) for m in chosen] if swept else []
    if fmt == "json":
        data: Any = [report_to_json(r) for r in reports]
        data = data[0] if len(data) == 1 else data
        if not reports:
            data = _with_accuracy(acceptance_to_json(accepted), accuracy_to_json(scored))
        _write(json.dumps(data, indent=2) + "\n", output)
    elif fmt == "markdown":
        _write("\n".join(render_markdown(r) for r in reports), output)
    else:
        console = Console(record=output is not None, width=200 if output else None)
        for r in reports:
            console.print(fit(render_rich(r)))
        if accepted:
            console.print(fit(acceptance_table(accepted)))
        if scored:
            console.print(fit(report_table(scored)))
        if output is not None:
            _write(console.export_text(), output)


def _with_accuracy(
    accepted: list[dict[str, Any]], scored: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each accept run's entry with its accuracy.json, where it has one."""
    by_run = {entry["run"]: entry for entry in scored}
    return [{**entry, "accuracy": by_run.get(entry["run"])} for entry in accepted]


@click.command("compare")
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@click.option(
    "--metric",
    "metrics",
    type=_METRIC,
    metavar="METRIC",
    multiple=True,
    help=f"Repeatable; default {', '.join(DEFAULT_METRICS)}. METRIC: {_METRICS_HELP}.",
)
@click.option("--force", is_flag=True, help="Compare even when the workloads differ.")
@click.option(
    "--include-invalid", is_flag=True, help="Count invalid levels too (their points marked)."
)
@click.option(
    "--at-interactivity",
    "speeds",
    metavar="TOK_S[,TOK_S...]",
    help="Compare tok/s per GPU where each user gets these output tok/s (interpolated between "
    "levels): the fair comparison of two machines, e.g. 20,40,80.",
)
@json_option("the result")
def compare(
    a: Path,
    b: Path,
    metrics: tuple[str, ...],
    force: bool,
    include_invalid: bool,
    speeds: str | None,
    as_json: bool,
) -> None:
    """B relative to A on matched concurrency levels: delta, direction, and whether it is
    within the runs' own spread (repeats) or a real change; machines side by side. Levels
    whose validity verdict failed are left out (named in a warning) unless --include-invalid.

    Accept runs compare acceptance per prompt set; with accuracy (`repro accept --accuracy`
    on two machines, one lock), B's accuracy against A's with a 95% interval: a drop beyond
    it is flagged REGRESSION and exits 1."""
    run_a, run_b = load_runs([a, b])
    if speeds is not None:
        _compare_at_interactivity(run_a, run_b, _speeds(speeds), as_json)
        return
    deltas = compare_acceptance(run_a, run_b)
    checks = compare_accuracy(run_a, run_b)
    if not (run_a.levels and run_b.levels):  # accept runs: acceptance per prompt set only
        if not deltas:
            raise click.UsageError(
                f"{a} and {b} share neither concurrency levels nor prompt sets to compare"
            )
        if as_json:
            rows = [{**vars(d), "delta": d.delta} for d in deltas]
            accuracy = [c.model_dump(mode="json") for c in checks]
            click.echo(json.dumps({"acceptance": rows, "accuracy": accuracy}, indent=2))
        else:
            Console().print(fit(acceptance_comparison_table(run_a, run_b, deltas)))
            if checks:
                Console().print(fit(comparison_table(run_a, run_b, checks)))
        _gate(checks, b)
        return
    result = compare_runs(
        run_a, run_b, metrics or DEFAULT_METRICS, force=force, include_invalid=include_invalid
    )
    if as_json:
        doc = comparison_to_json(result)
        if checks:
            doc["accuracy"] = [c.model_dump(mode="json") for c in checks]
        click.echo(json.dumps(doc, indent=2))
    else:
        Console().print(render_comparison(result))
        if deltas:
            Console().print(fit(acceptance_comparison_table(run_a, run_b, deltas)))
        if checks:
            Console().print(fit(comparison_table(run_a, run_b, checks)))
    _gate(checks, b)


def _gate(checks: list[AccuracyCheck], b: Path) -> None:
    """Exit 1 when B answers worse than A beyond the interval (after the tables)."""
    regressed = [c.prompt_set for c in checks if c.verdict == "regression"]
    if regressed:
        raise ReproError(
            f"{b}: accuracy below A's beyond the 95% interval on {', '.join(regressed)}",
            hint="the same lock should answer alike on both machines: check the kernels "
            "and quantisation this machine ran (docs/acceptance.md, accuracy gate)",
        )


def _speeds(text: str) -> list[float]:
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        values = []
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        raise click.BadParameter(
            f"{text!r}: expected positive tok/s per user, e.g. 20,40,80",
            param_hint="--at-interactivity",
        )
    return values


def _compare_at_interactivity(
    run_a: LoadedRun, run_b: LoadedRun, speeds: list[float], as_json: bool
) -> None:
    from repro.report.interactivity import compare_at_interactivity

    rows = compare_at_interactivity(run_a, run_b, speeds)
    if as_json:
        click.echo(json.dumps([row.model_dump() for row in rows], indent=2))
        return
    table = Table(title="tok/s per GPU at equal interactivity", title_justify="left")
    for column in ("tok/s per user", f"A {run_a.label}", f"B {run_b.label}", "B/A"):
        table.add_column(column, justify="right")
    for row in rows:
        cells = [
            "-" if v is None else f"{v:.1f}" for v in (row.a_tok_s_per_gpu, row.b_tok_s_per_gpu)
        ]
        ratio = "-" if row.ratio is None else f"{row.ratio:.2f}x"
        table.add_row(f"{row.tok_s_per_user:g}", *cells, ratio)
    Console().print(fit(table))
    if any(row.ratio is None for row in rows):
        click.echo("-: a run has no levels around that speed (outside what it measured)")
