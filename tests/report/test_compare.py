"""`repro compare A B`: matched points, deltas with direction, spread, machines side by side."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.errors import ReproError
from repro.report import compare_runs, load_run
from repro.runfolder import RunFolder
from tests.report.conftest import Runs
from tests.report.helpers import raw_values


def test_deltas_direction_and_verdict_follow_the_records(runs: Runs) -> None:
    cmp = compare_runs(load_run(runs.ar), load_run(runs.dflash))
    assert cmp.matched == ["c=1", "c=4"] and cmp.only_a == [] and cmp.only_b == []
    assert "different models" not in " ".join(cmp.warnings)
    a_vals = raw_values(runs.ar, "output_throughput")
    b_vals = raw_values(runs.dflash, "output_throughput")
    tput = [p for p in cmp.points if p.metric == "output_throughput"]
    assert [p.level for p in tput] == [f"c={c}" for c in sorted(set(a_vals) & set(b_vals))]
    for p in tput:
        a, b = a_vals[int(p.level[2:])], b_vals[int(p.level[2:])]
        assert p.a == pytest.approx(sum(a) / len(a)) and p.b == pytest.approx(sum(b) / len(b))
        assert p.delta == pytest.approx(p.b - p.a)
        if min(len(a), len(b)) < 2:  # a repeat invalid on a loaded host: the one-repeat rule
            assert p.verdict in ("real change", "within noise (95% CI)", "no spread (1 repeat)")
            continue
        disjoint = max(a) < min(b) or max(b) < min(a)
        expected = ("better" if p.b > p.a else "worse") if disjoint else "same"
        assert p.direction == expected
        assert p.verdict == ("real change" if disjoint else "within spread")
    ttft = [p for p in cmp.points if p.metric == "ttft"]
    for p in ttft:  # lower is better; overlapping repeats: the same within noise
        if p.verdict == "real change":
            assert p.direction == ("better" if p.b < p.a else "worse")
        elif p.verdict != "no spread (1 repeat)":
            assert p.direction == "same"
    # the baseline has no drafter: acceptance length is only on one side, so not compared
    assert not [p for p in cmp.points if p.metric == "accept_length"]


def test_only_matched_points_and_no_spread_without_repeats(runs: Runs) -> None:
    cmp = compare_runs(load_run(runs.dflash), load_run(runs.dflash_c48))
    assert cmp.matched == ["c=4"] and cmp.only_a == ["c=1"] and cmp.only_b == ["c=8"]
    assert {p.level for p in cmp.points} == {"c=4"}
    assert {p.verdict for p in cmp.points} == {"no spread (1 repeat)"}
    assert cmp.same_machine


def _copy(src: Path, tmp_path: Path) -> Path:
    dest = tmp_path / src.name
    shutil.copytree(src, dest)
    return dest


def test_different_workloads_are_refused_unless_forced(runs: Runs, tmp_path: Path) -> None:
    other = _copy(runs.dflash, tmp_path)
    meta = json.loads(RunFolder(other).run_file.read_text())
    meta["workload"]["output_len"] = 1024
    RunFolder(other).run_file.write_text(json.dumps(meta))
    with pytest.raises(ReproError) as err:
        compare_runs(load_run(runs.ar), load_run(other))
    assert "output_len: 16 vs 1024" in err.value.message
    cmp = compare_runs(load_run(runs.ar), load_run(other), force=True)
    assert any("workloads differ" in w for w in cmp.warnings)
    result = CliRunner().invoke(main, ["compare", str(runs.ar), str(other)])
    assert result.exit_code == 1 and "--force" in result.output


def test_runs_on_different_prompts_are_refused_unless_forced(runs: Runs, tmp_path: Path) -> None:
    other = _copy(runs.dflash, tmp_path)
    meta = json.loads(RunFolder(other).run_file.read_text())
    source = meta["workload"]["dataset_source"]
    assert source["kind"] == "shipped" and source["sha256"]
    source["sha256"] = "0" * 64  # the same set name, other prompts (an edited file)
    RunFolder(other).run_file.write_text(json.dumps(meta))
    with pytest.raises(ReproError) as err:
        compare_runs(load_run(runs.ar), load_run(other))
    assert "prompts:" in err.value.message and "0" * 64 in err.value.message
    meta["workload"].pop("dataset_source")  # a record from before sources were kept
    RunFolder(other).run_file.write_text(json.dumps(meta))
    assert compare_runs(load_run(runs.ar), load_run(other)).matched == ["c=1", "c=4"]


def test_fingerprints_side_by_side_across_machines(runs: Runs, tmp_path: Path) -> None:
    other = _copy(runs.dflash, tmp_path)
    machine = json.loads(RunFolder(other).machine_file.read_text())
    machine["hostname"] = "b200-box"
    machine["interconnect"] = "all-nvlink"
    machine["gpus"] = [{"index": i, "name": "NVIDIA B200", "compute_cap": "10.0"} for i in range(8)]
    machine["interconnect_probe"] = {
        "status": "measured",
        "message": "",
        "gpus": 8,
        "where": "image repro/sglang:x",
        "points": [
            {"size_bytes": 1 << 30, "time_us": 5e3, "algbw_gbps": 214.7, "busbw_gbps": 375.8}
        ],
    }
    RunFolder(other).machine_file.write_text(json.dumps(machine))
    cmp = compare_runs(load_run(runs.dflash), load_run(other))
    assert not cmp.same_machine
    rows = {r.field: r for r in cmp.machines}
    assert rows["GPUs"].b == "8x NVIDIA B200" and rows["GPUs"].a == "none"
    assert rows["interconnect"].differs and rows["interconnect"].b == "all-nvlink"
    assert rows["interconnect probe"].a == "-"  # the probe stands next to the class
    assert rows["interconnect probe"].b == "all-reduce busbw 375.8 GB/s peak (8 GPUs, nccl)"
    assert rows["machine class"].b == "8x B200, all-nvlink"
    assert not rows["model"].differs
    result = CliRunner().invoke(main, ["compare", str(runs.dflash), str(other)])
    assert result.exit_code == 0, result.output
    assert "different machines" in result.stdout and "all-nvlink" in result.stdout


def test_the_default_columns_are_not_two_views_of_one_number(runs: Runs) -> None:
    """Mean ITL is mean TPOT when requests have one length (bench_serving's per-token ITL):
    compare shows TPOT and the p99 ITL, which differ at every level."""
    result = CliRunner().invoke(main, ["compare", str(runs.ar), str(runs.dflash), "--json"])
    assert result.exit_code == 0, result.output
    points = json.loads(result.stdout)["points"]
    shown = {p["metric"] for p in points}
    assert "itl" not in shown and {"tpot", "p99_itl"} <= shown
    by = {(p["metric"], p["level"]): p for p in points}
    for metric, level in by:
        if metric == "tpot":
            assert by[("p99_itl", level)]["b"] != pytest.approx(by[(metric, level)]["b"])


def test_cli_json(runs: Runs) -> None:
    result = CliRunner().invoke(
        main, ["compare", str(runs.ar), str(runs.dflash), "--json", "--metric", "itl"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["simulated"] is True and data["matched"] == ["c=1", "c=4"]
    assert {p["metric"] for p in data["points"]} == {"itl"}


def _shift_throughput(record: Path, factor: float) -> None:
    """Scale the single-repeat levels' output throughput (value and interval) by `factor`."""
    summary = json.loads(RunFolder(record).summary_file.read_text())
    for level in summary["levels"]:
        level["output_throughput"] *= factor
        ci = level["output_throughput_ci95"]
        ci["low"], ci["high"] = ci["low"] * factor, ci["high"] * factor
    RunFolder(record).summary_file.write_text(json.dumps(summary))


def test_one_repeat_is_same_within_its_interval_and_changed_outside(
    runs: Runs, tmp_path: Path
) -> None:
    near, far = _copy(runs.dflash_c48, tmp_path / "near"), _copy(runs.dflash_c48, tmp_path / "far")
    _shift_throughput(near, 1.002)  # well inside a 95% interval of a few percent
    _shift_throughput(far, 3.0)
    base = load_run(runs.dflash_c48)
    close = [
        p for p in compare_runs(base, load_run(near)).points if p.metric == "output_throughput"
    ]
    assert close and all(p.direction == "same" for p in close)
    assert all(p.verdict == "within noise (95% CI)" for p in close)
    apart = [p for p in compare_runs(base, load_run(far)).points if p.metric == "output_throughput"]
    assert all(p.direction == "better" and p.verdict == "real change" for p in apart)
