"""Accuracy in accept runs, reports and compares: per prompt set, with Wilson's 95%
interval, against the baseline (accuracy.json's checks) or run A against run B (two machines
on one lock), each difference with Newcombe's interval and the gate's verdict.

Shown in percent and percentage points, so that a row fits 80 columns.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from repro.accuracygate import check_runs
from repro.report.records import LoadedRun
from repro.schema.accuracy import AccuracyCheck, AccuracyResults, AccuracySet
from repro.schema.base import Interval

FLAG = "REGRESSION"


def percent(value: float | None, ci: Interval | None) -> str:
    """`62% [48, 74]`; `-` for no value."""
    if value is None:
        return "-"
    text = f"{100 * value:.0f}%"
    return text + (f" [{100 * ci.low:.0f}, {100 * ci.high:.0f}]" if ci is not None else "")


def points(value: float | None, ci: Interval | None) -> str:
    """A difference in percentage points, `-25 [-41, -8]`."""
    if value is None:
        return "-"
    text = f"{100 * value:+.0f}"
    return text + (f" [{100 * ci.low:+.0f}, {100 * ci.high:+.0f}]" if ci is not None else "")


def verdict_text(check: AccuracyCheck) -> str:
    return FLAG if check.verdict == "regression" else check.verdict


def _table(title: str, first: list[str], numbers: list[str], verdict: bool = True) -> Table:
    """A table of per-set rows: `first` columns as text, `numbers` right-justified, then the
    gate's verdict."""
    table = Table(title=title, title_justify="left")
    for name in first:
        table.add_column(name, no_wrap=name == "run")
    for name in numbers:
        table.add_column(name, justify="right")
    if verdict:
        table.add_column("verdict", no_wrap=True)
    return table


def results_table(results: AccuracyResults) -> Table:
    """One accept run's accuracy: the recipe, its baseline and the gate per prompt set."""
    base = {s.prompt_set: s for s in results.baseline_sets}
    checks = {c.prompt_set: c for c in results.checks}
    title = f"{results.recipe_name}: accuracy (exact final number) [Wilson 95%]"
    if base:
        title += f"\nbaseline: {results.baseline}; B - A in points [Newcombe 95%]"
    numbers = ["n", "recipe", *(["baseline", "B - A"] if base else [])]
    table = _table(title, ["prompt set"], numbers, verdict=bool(base))
    for s in results.sets:
        row = [s.prompt_set, str(s.asked), percent(s.accuracy, s.ci95)]
        b, check = base.get(s.prompt_set), checks.get(s.prompt_set)
        if base:
            row.append(percent(b.accuracy, b.ci95) if b else "-")
            row.append(points(check.difference, check.ci95) if check else "-")
            row.append(verdict_text(check) if check else "-")
        table.add_row(*row)
    return table


def accuracy_runs(runs: list[LoadedRun]) -> list[LoadedRun]:
    """The runs that carry accuracy results."""
    return [r for r in runs if r.accuracy is not None and r.accuracy.sets]


def _sets(run: LoadedRun) -> list[AccuracySet]:
    return run.accuracy.sets if run.accuracy else []


def accuracy_rows(runs: list[LoadedRun]) -> list[dict[str, Any]]:
    """One row per (prompt set, run), formatted: accuracy with its interval, the baseline's
    and the gate's verdict where measured (the terminal table and the HTML page show them)."""
    rows = []
    names = list(dict.fromkeys(s.prompt_set for run in runs for s in _sets(run)))
    for name in names:
        for run in runs:
            found = next((s for s in _sets(run) if s.prompt_set == name), None)
            if found is None or run.accuracy is None:
                continue
            base = next((s for s in run.accuracy.baseline_sets if s.prompt_set == name), None)
            check = next((c for c in run.accuracy.checks if c.prompt_set == name), None)
            rows.append({
                "prompt_set": name, "run": run.label, "simulated": run.simulated,
                "asked": str(found.asked), "accuracy": percent(found.accuracy, found.ci95),
                "baseline": percent(base.accuracy, base.ci95) if base else "-",
                "verdict": verdict_text(check) if check else "-",
            })  # fmt: skip
    return rows


def report_table(runs: list[LoadedRun]) -> Table:
    """Accuracy per prompt set per run (its baseline's beside it, where measured)."""
    table = _table(
        "Accuracy per prompt set (exact final number) [Wilson 95%]",
        ["prompt set", "run"],
        ["n", "accuracy", "baseline"],
    )
    for row in accuracy_rows(runs):
        run = row["run"] + (" (SIMULATED)" if row["simulated"] else "")
        table.add_row(
            row["prompt_set"], run, row["asked"], row["accuracy"], row["baseline"], row["verdict"]
        )
    return table


def compare_accuracy(a: LoadedRun, b: LoadedRun) -> list[AccuracyCheck]:
    """B against A on every prompt set both scored (A the reference machine)."""
    return check_runs(a.label, _sets(a), b.label, _sets(b))


def comparison_table(a: LoadedRun, b: LoadedRun, checks: list[AccuracyCheck]) -> Table:
    table = _table(
        f"Accuracy: B = {b.label} vs A = {a.label}\nB - A in points [Newcombe 95%]",
        ["prompt set"],
        ["A", "B", "B - A"],
    )
    sa = {s.prompt_set: s for s in _sets(a)}
    sb = {s.prompt_set: s for s in _sets(b)}
    for c in checks:
        x, y = sa[c.prompt_set], sb[c.prompt_set]
        table.add_row(
            c.prompt_set, percent(x.accuracy, x.ci95), percent(y.accuracy, y.ci95),
            points(c.difference, c.ci95), verdict_text(c),
        )  # fmt: skip
    return table


def accuracy_to_json(runs: list[LoadedRun]) -> list[dict[str, Any]]:
    return [
        {"run": r.label, "simulated": r.simulated, **r.accuracy.model_dump(mode="json")}
        for r in accuracy_runs(runs)
        if r.accuracy is not None
    ]
