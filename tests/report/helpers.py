"""Reading run records directly (json), independent of repro.report, to check its numbers."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from repro.runfolder import RunFolder


def raw_levels(run: Path) -> list[dict[str, Any]]:
    return list(json.loads(RunFolder(run).summary_file.read_text())["levels"])


def raw_values(run: Path, key: str) -> dict[int, list[float]]:
    """Per configured concurrency (`max_concurrency`, bench_serving's name), the summary's value
    of `key` in each valid repeat, as the report counts them. On a loaded host a simulator
    can fall behind its clock, and that level is rightly invalid: it is left out here too."""
    out: dict[int, list[float]] = {}
    for level in sorted(raw_levels(run), key=lambda lv: (lv["max_concurrency"], lv["repeat"])):
        if level.get(key) is not None and level["valid"]:
            out.setdefault(level["max_concurrency"], []).append(float(level[key]))
    return out


def raw_means(run: Path, key: str) -> dict[int, float]:
    return {c: statistics.fmean(v) for c, v in raw_values(run, key).items()}


def jsonl_rows(run: Path, concurrency: int, repeat: int) -> list[dict[str, Any]]:
    text = RunFolder(run).requests_file(concurrency, repeat).read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]
