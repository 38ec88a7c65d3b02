"""Saved acceptance runs in reports and comparisons: acceptance per prompt set, side by side.

An accept run (`repro accept`, or the accept/ part of a `repro run` folder) has no concurrency
sweep, so the throughput tables have nothing to show for it; what a user holds against a
drafter's model card is the acceptance of each prompt set, under both conventions (pooled over
tokens; mean of per-request values, as z-lab's DFlash benchmark reports it) with their 95%
intervals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.table import Table

from repro.report.records import LoadedRun
from repro.schema.accept import AcceptSet
from repro.schema.base import Interval


def _value(value: float | None, ci: Interval | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f} [{ci.low:.2f}, {ci.high:.2f}]" if ci is not None else f"{value:.2f}"


def _sets(run: LoadedRun) -> dict[str, AcceptSet]:
    """Each prompt set, then the set within each of its context-length and output-position
    buckets (`longbench-v2 context 8k-32k`), when the run measured them."""
    sets = run.accept.sets if run.accept else []
    return {
        name: s
        for whole in sets
        for name, s in [(whole.prompt_set, whole)]
        + [(b.prompt_set, b) for _, b in whole.bucketed()]
    }


def accept_runs(runs: list[LoadedRun]) -> list[LoadedRun]:
    """The runs that carry acceptance results."""
    return [r for r in runs if r.accept is not None and r.accept.sets]


def acceptance_rows(runs: list[LoadedRun]) -> list[dict[str, Any]]:
    """One row per (prompt set, run), formatted: both conventions with intervals, prompts,
    mean output length (the terminal table and the HTML page show the same rows)."""
    rows = []
    names = list(dict.fromkeys(name for run in runs for name in _sets(run)))
    for name in names:
        for run in runs:
            s = _sets(run).get(name)
            if s is None:
                continue
            rows.append(
                {
                    "prompt_set": name,
                    "run": run.label,
                    "simulated": run.simulated,
                    "mean_per_request": _value(
                        s.accept_length_mean_per_request, s.accept_length_mean_per_request_ci95
                    ),
                    "pooled": _value(s.accept_length, s.accept_length_ci95),
                    "prompts": str(s.prompts),
                    "mean_output": f"{s.mean_output_tokens:.0f}" if s.mean_output_tokens else "-",
                }
            )
    return rows


def acceptance_table(runs: list[LoadedRun]) -> Table:
    """The acceptance rows as a terminal table."""
    table = Table(
        title="Acceptance length per prompt set (mean per request [95% CI]; pooled [95% CI])",
        title_justify="left",
    )
    table.add_column("prompt set")
    table.add_column("run")
    for header in ("mean/request", "pooled", "prompts", "mean output"):
        table.add_column(header, justify="right")
    for row in acceptance_rows(runs):
        run = row["run"] + (" (SIMULATED)" if row["simulated"] else "")
        table.add_row(
            row["prompt_set"], run, row["mean_per_request"], row["pooled"], row["prompts"],
            row["mean_output"],
        )  # fmt: skip
    return table


@dataclass
class SetDelta:
    """B relative to A on one prompt set, per-request mean convention."""

    prompt_set: str
    a: float | None
    b: float | None
    verdict: str  # "b higher", "a higher", "same (intervals overlap)", "not comparable"

    @property
    def delta(self) -> float | None:
        return None if self.a is None or self.b is None else self.b - self.a


def compare_acceptance(a: LoadedRun, b: LoadedRun) -> list[SetDelta]:
    """The prompt sets both runs measured: B - A, and whether their intervals overlap."""
    sa, sb = _sets(a), _sets(b)
    deltas = []
    for name in [n for n in sa if n in sb]:
        x, y = sa[name], sb[name]
        va, vb = x.accept_length_mean_per_request, y.accept_length_mean_per_request
        ca, cb = x.accept_length_mean_per_request_ci95, y.accept_length_mean_per_request_ci95
        if va is None or vb is None:
            verdict = "not comparable"
        elif ca is not None and cb is not None and ca.low <= cb.high and cb.low <= ca.high:
            verdict = "same (intervals overlap)"
        else:
            verdict = "b higher" if vb > va else "a higher"
        deltas.append(SetDelta(name, va, vb, verdict))
    return deltas


def acceptance_comparison_table(a: LoadedRun, b: LoadedRun, deltas: list[SetDelta]) -> Table:
    table = Table(
        title=f"Acceptance per prompt set: {b.label} vs {a.label} (mean per request)",
        title_justify="left",
    )
    table.add_column("prompt set")
    for header in ("A", "B", "B - A"):
        table.add_column(header, justify="right")
    table.add_column("verdict")
    for d in deltas:
        delta = f"{d.delta:+.2f}" if d.delta is not None else "-"
        a_text = f"{d.a:.2f}" if d.a is not None else "-"
        b_text = f"{d.b:.2f}" if d.b is not None else "-"
        table.add_row(d.prompt_set, a_text, b_text, delta, d.verdict)
    return table


def acceptance_to_json(runs: list[LoadedRun]) -> list[dict[str, Any]]:
    return [
        {
            "run": r.label,
            "simulated": r.simulated,
            "forced": r.forced.label() if r.forced else None,
            "sets": [s.model_dump(mode="json") for s in r.accept.sets],
        }
        for r in accept_runs(runs)
        if r.accept is not None
    ]
