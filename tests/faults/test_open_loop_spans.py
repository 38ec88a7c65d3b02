"""An open-loop level whose schedule would span years (`--request-rate 1e-9`, a tiny
`--trace-speedup`, a timestamp far in the future) is refused before the server is asked or a
run folder made, with the span it would take; it never waits silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.bench.arrivals import MAX_SCHEDULE_S
from repro.cli import main

UNREACHABLE = "http://127.0.0.1:9"  # nothing listens: a refusal comes before any request


def _far_trace(tmp_path: Path) -> str:
    path = tmp_path / "far.jsonl"
    rows = [{"timestamp": t, "input_length": 4, "output_length": 2} for t in (0, 1e15)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


@pytest.mark.parametrize(
    ("options", "span"),
    [
        (["--request-rate", "1e-9"], "6.3e+10 s"),
        (["--request-rate", "4,1e-6"], "6.3e+07 s"),
        (["--trace", "demo", "--trace-speedup", "1,1e-6"], "days"),
        (["--trace", "FAR"], "1e+12 s"),
    ],
    ids=["rate", "second-rate", "speedup", "timestamp"],
)
def test_a_schedule_of_years_is_refused_up_front(
    tmp_path: Path, options: list[str], span: str
) -> None:
    options = [_far_trace(tmp_path) if o == "FAR" else o for o in options]
    runs = tmp_path / "runs"
    result = CliRunner().invoke(
        main, ["bench", "demo", *options, "--url", UNREACHABLE, "--output", str(runs / "r")]
    )
    assert result.exit_code == 1, result.output
    error = result.output.strip().splitlines()[0]
    assert error.startswith("error: level ") and "schedule spans" in error, error
    assert span in error and f"{MAX_SCHEDULE_S / 3600:g} h" in error, error
    assert not runs.exists()
