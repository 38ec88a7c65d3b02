"""Verdicts on real sweeps against the simulator: a DFLASH server's running-request cap, a
server killed mid-level, and `--resume` measuring invalid levels again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from repro.bench import BenchOptions, RequestResult, run_bench
from repro.bench.target import BenchTarget
from repro.cli import main
from repro.report import build_report, compare_runs, load_run
from repro.runfolder import RunFolder
from repro.schema.level import Level, Load
from tests.support.simulator import DFLASH, Simulators


class Levels:
    """Records which levels a sweep measures; optionally acts after the n-th request."""

    def __init__(self, after: int = 0, action: Any = None) -> None:
        self.started: list[int] = []  # the closed-loop concurrencies started
        self.done = 0
        self.after, self.action = after, action

    def level_started(self, load: Load, repeat: int, total: int) -> None:
        self.started.append(int(load.value))

    def request_done(self, result: RequestResult) -> None:
        self.done += 1
        if self.action is not None and self.done == self.after:
            self.action()

    def level_done(self, summary: Level) -> None:
        pass


def test_dflash_sweep_past_the_cap_is_invalid_and_left_out(
    simulator: Simulators, tmp_path: Path, demo: Any, runs: Path
) -> None:
    server = simulator.tiny(*DFLASH, "--enable-metrics",
                       REPRO_SIM_TIME_SCALE="0.3")  # fmt: skip
    try:
        opts = BenchOptions(
            url=server.url, concurrencies=[4, 64], input_len=16, output_len=8, prompts=64,
            runs_dir=runs, metrics_interval=0.05, endpoint="chat",
        )  # fmt: skip
        result = run_bench(BenchTarget.from_recipe(demo), opts)
        low, high = result.levels
        assert result.status == "complete"
        assert any("max_running_requests 48" in r for r in high.reasons) and not high.valid
        assert not any("max_running_requests" in r for r in low.reasons)
        for level in (low, high):  # the chat endpoint reports acceptance (sglext)
            assert level.accept_length is not None and level.accept_length > 1.0
            assert level.accept_length_ci95 is not None and level.verify_steps_per_s
            assert level.server is not None and level.server.limits is not None
            assert level.server.limits.max_running_requests == 48
            assert level.server.limits.speculative_algorithm == "DFLASH"
            assert level.server.metrics_available and level.server.samples >= 1
            assert level.client_cpu_s is not None and level.client_cpu_s > 0
        series = RunFolder(result.run_dir).metrics_file(64, 0).read_text().splitlines()
        assert len(series) == high.server.samples  # type: ignore[union-attr]
        assert "num_running_reqs" in json.loads(series[0])

        run = load_run(result.run_dir)
        report = build_report([run], "output_throughput")
        (row,) = report.rows
        assert row.cells["c=64"].value is None and row.cells["c=64"].reasons
        assert row.peak_level != "c=64"
        shown = build_report([run], "output_throughput", include_invalid=True).rows[0].cells["c=64"]
        assert shown.value == high.output_throughput and shown.invalid
        cmp = compare_runs(run, run)
        assert all(p.level != "c=64" for p in cmp.points)
        assert any("c=64 is invalid" in w and "48" in w for w in cmp.warnings)
        res = CliRunner().invoke(main, ["report", str(result.run_dir), "--format", "markdown"])
        assert res.exit_code == 0 and "invalid" in res.output, res.output

        seen = Levels()
        resumed = run_bench(None, BenchOptions(resume=result.run_dir), seen)
        assert seen.started == [lv.concurrency for lv in (low, high) if not lv.valid]
        assert resumed.status == "complete" and len(resumed.levels) == 2
    finally:
        server.stop()


def test_a_level_whose_server_was_killed_is_invalid_and_resumed(
    simulator: Simulators, tmp_path: Path, demo_plain: Any, runs: Path
) -> None:
    first = simulator.tiny(REPRO_SIM_TIME_SCALE="0.3")
    try:
        opts = BenchOptions(
            url=first.url, concurrencies=[2, 4], input_len=16, output_len=16, prompts=8,
            runs_dir=runs, read_timeout=5,
        )  # fmt: skip
        result = run_bench(
            BenchTarget.from_recipe(demo_plain), opts, Levels(after=3, action=first.kill)
        )
    finally:
        first.stop()
    assert result.status == "failed" and "c4-r0" in (result.error or "")
    (killed,) = result.levels
    assert killed.concurrency == 2 and killed.failed > 0 and not killed.valid
    assert any("requests failed" in r for r in killed.reasons)
    summary = json.loads(RunFolder(result.run_dir).summary_file.read_text())
    assert summary["levels"][0]["valid"] is False

    second = simulator.tiny(REPRO_SIM_TIME_SCALE="0.3")
    try:
        seen = Levels()
        resumed = run_bench(
            None,
            BenchOptions(resume=result.run_dir, url=second.url),
            seen,
        )
    finally:
        second.stop()
    assert seen.started == [2, 4]
    assert resumed.status == "complete"
    assert [(lv.concurrency, lv.failed) for lv in resumed.levels] == [(2, 0), (4, 0)]
