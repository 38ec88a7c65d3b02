"""`repro report`: numbers in the table are the records' numbers; best, peak and speedup."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.report import build_report, load_run, load_runs, render_markdown
from tests.report.conftest import Runs
from tests.report.helpers import raw_means, raw_values


def test_values_best_peak_and_speedup_follow_the_records(runs: Runs) -> None:
    ar, dflash = load_runs([runs.ar, runs.dflash])
    report = build_report([ar, dflash], "output_throughput", baseline=ar)
    means = {
        "demo-ar": raw_means(runs.ar, "output_throughput"),
        "demo-dflash": raw_means(runs.dflash, "output_throughput"),
    }
    repeats = {
        "demo-ar": raw_values(runs.ar, "output_throughput"),
        "demo-dflash": raw_values(runs.dflash, "output_throughput"),
    }
    assert report.levels == ["c=1", "c=4"]
    assert [r.label for r in report.rows] == ["demo-ar", "demo-dflash"]
    assert report.rows[0].is_baseline and report.baseline == "demo-ar"
    for row in report.rows:
        assert row.simulated
        for c, mean in means[row.label].items():
            assert row.cells[f"c={c}"].value == pytest.approx(mean)
            assert row.cells[f"c={c}"].repeats == len(repeats[row.label][c])
            if c in means["demo-ar"]:
                expected = mean / means["demo-ar"][c]
                assert row.cells[f"c={c}"].speedup == pytest.approx(expected)
        peak_c = max(means[row.label], key=means[row.label].__getitem__)
        assert row.peak_level == f"c={peak_c}"
        assert row.peak == pytest.approx(means[row.label][peak_c])
    for c in set(means["demo-ar"]) & set(means["demo-dflash"]):
        winner = max(means, key=lambda label, c=c: means[label][c])
        assert [r.label for r in report.rows if r.cells[f"c={c}"].best] == [winner]
    base_peak = report.rows[0].peak or 0.0
    assert report.rows[1].peak_speedup == pytest.approx((report.rows[1].peak or 0.0) / base_peak)


def test_lower_is_better_metric_marks_the_minimum(runs: Runs) -> None:
    report = build_report(load_runs([runs.ar, runs.dflash]), "ttft")
    means = {
        "demo-ar": raw_means(runs.ar, "mean_ttft_ms"),
        "demo-dflash": raw_means(runs.dflash, "mean_ttft_ms"),
    }
    values = {
        "demo-ar": raw_values(runs.ar, "mean_ttft_ms"),
        "demo-dflash": raw_values(runs.dflash, "mean_ttft_ms"),
    }
    for c in set(means["demo-ar"]) & set(means["demo-dflash"]):
        winner = min(means, key=lambda label, c=c: means[label][c])
        w = values[winner][c]
        tied = {  # a run whose repeats overlap the winner's is not beaten: it shares the mark
            label for label, v in values.items() if min(v[c]) <= max(w) and min(w) <= max(v[c])
        }
        assert {r.label for r in report.rows if r.cells[f"c={c}"].best} == {winner} | tied
    for row in report.rows:
        assert row.peak == pytest.approx(min(means[row.label].values()))


def test_baseline_outside_the_list_becomes_the_first_row(runs: Runs) -> None:
    report = build_report([load_run(runs.dflash)], baseline=load_run(runs.ar))
    assert [r.label for r in report.rows] == ["demo-ar", "demo-dflash"]
    assert report.rows[0].cells["c=1"].speedup == pytest.approx(1.0)


def test_markdown_shows_values_and_simulated(runs: Runs) -> None:
    text = render_markdown(build_report(load_runs([runs.ar, runs.dflash, runs.dflash_c48])))
    assert "SIMULATED" in text
    lines = [line for line in text.splitlines() if line.startswith("| demo-")]
    assert len(lines) == 3
    c48 = next(line for line in lines if line.startswith("| demo-dflash-c48"))
    cells = [cell.strip() for cell in c48.strip("|").split("|")]
    means = raw_means(runs.dflash_c48, "output_throughput")
    head = ["run", "machine", "image", "c=1", "c=4", "c=8", "peak"]
    assert cells[head.index("c=1")] == "-"  # not measured at c=1
    if 8 in means:  # else its one repeat was invalid (a simulator behind on a loaded host)
        assert cells[head.index("c=8")].strip("*").split()[0] == f"{means[8]:.1f}"
    assert "SIMULATED" in cells[0]


def test_cli_json_numbers_match_the_records(runs: Runs) -> None:
    result = CliRunner().invoke(
        main,
        ["report", str(runs.dflash), "--baseline", str(runs.ar), "--format", "json"],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["simulated"] is True and data["metric"]["name"] == "output_throughput"
    rows = {r["label"]: r for r in data["rows"]}
    assert all(r["marker"] == "SIMULATED" for r in rows.values())
    ar = raw_means(runs.ar, "output_throughput")
    df = raw_means(runs.dflash, "output_throughput")
    for c, mean in df.items():
        cell = rows["demo-dflash"]["cells"][f"c={c}"]
        assert cell["value"] == pytest.approx(mean)
        if c in ar:
            assert cell["speedup"] == pytest.approx(mean / ar[c])


def test_cli_table_marks_simulated_and_accept_metric(runs: Runs) -> None:
    result = CliRunner().invoke(
        main, ["report", str(runs.ar), str(runs.dflash), "--metric", "accept_length"]
    )
    assert result.exit_code == 0, result.output
    assert "SIMULATED" in result.stdout and "acceptance length" in result.stdout
    for c, mean in raw_means(runs.dflash, "accept_length_pooled").items():
        assert f"{mean:.2f}" in result.stdout, c
