"""What SGLang 0.5.23's own engine reported on the lent H200 (tests/fixtures/h200-sglang-0.5.23,
kept from `scripts/h200-engine device`, now scripts/gpu-engine), read with the code repro
reads live servers with."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from repro.bench.serverstate import parse_metrics, server_limits
from repro.cli import main
from repro.realengine.servermetrics import E2E, GENERATION_TOKENS, ITL, TTFT, parse_snapshot
from repro.runfolder import RunFolder
from repro.schema.serverinfo import ServerInfo

H200 = Path(__file__).resolve().parents[1] / "fixtures" / "h200-sglang-0.5.23"


def test_the_h200_servers_limits_are_read_from_its_server_info() -> None:
    info = json.loads(RunFolder(H200).server_info_file.read_text())
    limits = server_limits(ServerInfo.model_validate(info))
    assert limits is not None
    assert limits.running_cap == info["internal_states"][0]["effective_max_running_requests_per_dp"]
    assert limits.decode_log_interval == 40
    assert info["attention_backend"] == "triton" and info["disable_radix_cache"] is True


def test_the_h200_servers_metrics_parse_into_histograms_and_gauges() -> None:
    text = (H200 / "metrics.txt").read_text()
    snapshot = parse_snapshot(text)
    # only SGLang's own warm-up (8 tokens, not streamed) ran there: no ITL was observed
    assert ITL not in snapshot.histograms
    for name in (TTFT, E2E):
        hist = snapshot.histogram(name)
        assert hist.count >= 1 and list(hist.bounds) == sorted(hist.bounds)
        assert hist.bounds[-1] == float("inf")
    assert snapshot.counters[GENERATION_TOKENS] == 8
    sample = parse_metrics(text, 0.0)
    assert sample.num_running_reqs is not None and sample.token_usage is not None


def test_no_stand_in_op_was_called_while_the_h200_served() -> None:
    ops = json.loads((H200 / "standin-ops.json").read_text())
    assert {op["event"] for op in ops} >= {"import", "lookup"}
    assert not [op for op in ops if op["event"] == "call"]


def test_the_h200_bench_records_report_as_a_real_h200_with_energy() -> None:
    """`repro bench --url` on both endpoints against the H200's engine (second device run):
    repro's report reads them as real (not simulated) runs on one H200, every level valid with
    NVML energy per token."""
    runs = [H200 / "bench-generate", H200 / "bench-chat"]
    for run in runs:
        assert json.loads(RunFolder(run).server_info_file.read_text())["version"] == "0.5.23"
        assert json.loads(RunFolder(run).run_file.read_text())["simulated"] is False
        for level in json.loads(RunFolder(run).summary_file.read_text())["levels"]:
            assert level["valid"] is True, level["reasons"]
            assert level["energy"]["source"] == "nvml"
            assert 0 < level["joules_per_output_token"] < 10
    res = CliRunner().invoke(main, ["report", *map(str, runs)])
    assert res.exit_code == 0, res.output
    assert "1x H200" in res.output and "SIMULATED" not in res.output.upper()
