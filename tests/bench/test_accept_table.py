"""The drafter A/B table at 80 columns: both runs named once, told apart, numbers whole."""

from __future__ import annotations

import io

from rich.console import Console

from repro.cli.accept import diff_table
from repro.schema.accept import AcceptDiff
from repro.schema.base import Interval
from repro.tables import fit


def test_ab_table_names_both_drafters_apart_at_80_columns() -> None:
    a, b = "kimi26-ep4-dflash", "kimi26-ep4-dflash-long"
    diffs = [
        AcceptDiff(prompt_set=s, a=a, b=b, a_value=3.12, b_value=2.87, difference=-0.25,
                   ci95=Interval(low=-0.4, high=-0.1), pairs=32, verdict="a better")
        for s in ("gsm8k", "humaneval", "mt-bench")
    ]  # fmt: skip
    console = Console(width=80, record=True, file=io.StringIO())
    console.print(fit(diff_table(diffs)))
    out = console.export_text()
    assert f"A = {a}, B = {b}" in out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "3.12" in out and "2.87" in out and "a better" in out
