"""Saved accept runs work where bench runs do: `repro report` shows acceptance per prompt set
(not throughput tables of dashes) and `repro compare` sets them side by side."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from repro.cli import main
from tests.report.conftest import DFLASH_ARGS
from tests.report.simbench import NO_LOAD, REPO, REPRO_SIM
from tests.support.simulator import Simulators


def _accept(url: str, out: Path) -> Path:
    args = [
        "accept",
        str(REPO / "recipes" / "demo.yaml"),
        "--url",
        url,
        "--prompt-sets",
        "math,chat",
    ]
    result = CliRunner().invoke(
        main, [*args, "-n", "4", "--max-new-tokens", "24", "--output", str(out)]
    )
    assert result.exit_code == 0, result.output
    return out


def test_report_and_compare_of_two_accept_runs(simulator: Simulators, tmp_path: Path) -> None:
    sim = simulator(DFLASH_ARGS, NO_LOAD, module=REPRO_SIM)
    try:
        a = _accept(sim.url, tmp_path / "a")
        b = _accept(sim.url, tmp_path / "b")
    finally:
        sim.stop()

    shown = CliRunner().invoke(main, ["report", str(a), str(b)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "Acceptance length per prompt set" in shown.output
    assert "math" in shown.output and "chat" in shown.output
    assert "SIMULATED" in shown.output
    assert "output throughput" not in shown.output  # no sweep: no table of dashes

    data = json.loads(CliRunner().invoke(main, ["report", str(a), "--format", "json"]).output)
    [run] = data
    math = next(s for s in run["sets"] if s["prompt_set"] == "math")
    assert math["accept_length_mean_per_request"] > 1 and math["accept_length"] > 1

    page = tmp_path / "page.html"
    html = CliRunner().invoke(main, ["report", str(a), str(b), "--format", "html", "-o", str(page)])
    assert html.exit_code == 0, html.output
    text = page.read_text()
    assert "<h2>Acceptance length per prompt set</h2>" in text and "<td>math</td>" in text
    assert "<h2>output throughput" not in text

    compared = CliRunner().invoke(main, ["compare", str(a), str(b)], env={"COLUMNS": "200"})
    assert compared.exit_code == 0, compared.output
    assert "share no concurrency level" not in compared.output
    assert "Acceptance per prompt set" in compared.output
    rows = json.loads(CliRunner().invoke(main, ["compare", str(a), str(b), "--json"]).output)
    sets = {r["prompt_set"]: r for r in rows["acceptance"]}
    assert set(sets) == {"math", "chat"}
    # the same deployment and prompts twice: the same acceptance, within noise
    assert all(r["verdict"] == "same (intervals overlap)" for r in sets.values()), sets
