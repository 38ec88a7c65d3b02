"""Energy and cost per level: the simulator's power model recorded as simulated, dollars per
million tokens from the GPU-hour price, and the sampler's integration on real H200 readings."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repro.bench import BenchOptions, run_bench
from repro.bench.energy import LevelMeter, usd_per_mtok
from repro.bench.session import ServerSession
from repro.bench.target import BenchTarget
from repro.bench.telemetry import integrate_power, is_local
from repro.cli import main
from repro.cli.bench import summary_table
from repro.runfolder import RunFolder
from repro.schema.server import LevelEnergy
from tests.support.simulator import Sim

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "gpu" / "h200_energy.json"


def _opts(url: str, runs: Path, **kw: Any) -> BenchOptions:
    base: dict[str, Any] = dict(
        url=url, concurrencies=[1, 8], input_len=32, output_len=32, prompts=16, runs_dir=runs,
    )  # fmt: skip
    return BenchOptions(**{**base, **kw})


def test_sim_levels_record_simulated_energy_and_cost(
    sim_plain: Sim, demo_plain: Any, runs: Path
) -> None:
    result = run_bench(
        BenchTarget.from_recipe(demo_plain), _opts(sim_plain.url, runs, gpu_hour_usd=2.5)
    )
    summary = json.loads(RunFolder(result.run_dir).summary_file.read_text())
    assert json.loads(RunFolder(result.run_dir).run_file.read_text())["gpu_hour_usd"] == 2.5
    low, high = summary["levels"]
    for level in (low, high):
        energy = level["energy"]
        # this test host has no NVML GPU: the simulator's model, labelled so, with the reason
        assert energy["source"] == "simulated" and "no NVML" in energy["reason"]
        assert energy["gpus"] == 1 and energy["energy_j"] > 0
        # demo profile: 90 W idle, 350 W + 2 W/request while stepping (scaled time: steps
        # fill the level, so the mean lies between idle and the busy draw)
        assert 90 <= level["mean_power_w"] <= 350 + 2 * 8
        assert level["joules_per_output_token"] == pytest.approx(
            energy["energy_j"] / level["total_output_tokens"]
        )
        assert level["usd_per_mtok"] == pytest.approx(2.5 / 3600 / level["output_throughput"] * 1e6)
    # batching: more requests per step spend fewer joules and dollars per token
    assert high["joules_per_output_token"] < low["joules_per_output_token"]
    assert high["usd_per_mtok"] < low["usd_per_mtok"]


def test_without_a_price_a_level_has_energy_but_no_cost(
    sim_plain: Sim, demo_plain: Any, runs: Path
) -> None:
    result = run_bench(
        BenchTarget.from_recipe(demo_plain), _opts(sim_plain.url, runs, concurrencies=[2])
    )
    level = result.levels[0]
    assert level.usd_per_mtok is None  # the demo recipe states no cost
    assert level.energy is not None and level.energy.source == "simulated"


def test_a_remote_server_gets_no_readings_and_a_reason() -> None:
    async def level() -> LevelEnergy:
        meter = LevelMeter(ServerSession("http://10.255.255.1:30000"))
        await meter.start()
        return await meter.stop()

    energy = asyncio.run(level())
    assert energy.source == "none" and energy.reason is not None
    assert energy.reason.startswith("remote server")


def test_cost_formula() -> None:
    # 8 GPUs at $4/h = $0.00889/s; 10k tok/s -> $0.889 per million tokens
    assert usd_per_mtok(8, 4.0, 10_000) == pytest.approx(8 * 4 / 3600 / 10_000 * 1e6)
    assert usd_per_mtok(8, None, 10_000) is None and usd_per_mtok(0, 4.0, 1.0) is None
    assert is_local("http://127.0.0.1:30000") and not is_local("http://10.0.0.7:30000")


def test_integrated_power_matches_the_h200_energy_counter() -> None:
    """Real NVML readings (benchmarks/gpu_energy.py on an H200): under a steady matmul load
    the integrated 100 ms power samples agree with the energy counter within 1%."""
    steady = json.loads(FIXTURE.read_text())["windows"][0]
    assert steady["window"] == "steady" and steady["gpu"] == "NVIDIA H200"
    joules = integrate_power(steady["t_s"], steady["power_w"], steady["duration_s"])
    assert joules == pytest.approx(steady["integrated_j"])
    assert joules == pytest.approx(steady["counter_j"], rel=0.01)
    assert 600 < joules / steady["duration_s"] < 700  # an H200 at its 700 W limit


def test_h200_power_readings_lag_a_load_change() -> None:
    """The H200 reports power averaged over about a second: a window that opens right after a
    load ends still reads the load, so integrated samples overstate its energy; the counter
    is what levels record (nvml), samples only where a GPU has no counter."""
    moving = json.loads(FIXTURE.read_text())["windows"][1]
    joules = integrate_power(moving["t_s"], moving["power_w"], moving["duration_s"])
    assert joules > moving["counter_j"] * 1.05
    assert moving["power_w"][0] > 600 and min(moving["power_w"]) < 150


def test_report_shows_cost_and_plots_the_cost_pareto(
    sim_plain: Sim, demo_plain: Any, runs: Path, tmp_path: Path
) -> None:
    result = run_bench(
        BenchTarget.from_recipe(demo_plain), _opts(sim_plain.url, runs, gpu_hour_usd=2.0)
    )
    cli = CliRunner()
    out = cli.invoke(main, ["report", str(result.run_dir), "--metric", "usd_per_mtok",
                            "--format", "json"])  # fmt: skip
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert "usd_per_mtok" in json.dumps(rows)
    plots = tmp_path / "plots"
    out = cli.invoke(main, ["report", str(result.run_dir), "--plots", str(plots)])
    assert out.exit_code == 0, out.output
    assert (plots / "cost_pareto.png").stat().st_size > 1000
    table = summary_table(result.levels)
    headers = [c.header for c in table.columns]
    assert "J/tok (sim)" in headers and "W (sim)" in headers and "$/Mtok" in headers
