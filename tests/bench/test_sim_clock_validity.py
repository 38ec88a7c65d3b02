"""A saturated simulator makes its level invalid: the numbers would measure this host."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repro.bench import BenchOptions, run_bench
from repro.bench.target import BenchTarget
from repro.run.stages import clock_warning
from tests.support.simulator import DFLASH, Simulators


def test_a_simulator_behind_its_clock_invalidates_the_level(
    simulator: Simulators, tmp_path: Path, demo: Any, runs: Path
) -> None:
    # demo's decode steps are ~8 ms: at time-scale 0.0005 the host cannot emit them in time
    server = simulator.tiny(*DFLASH, REPRO_SIM_TIME_SCALE="0.0005")
    try:
        opts = BenchOptions(
            url=server.url, concurrencies=[32], input_len=16, output_len=64, prompts=64,
            runs_dir=runs,
        )  # fmt: skip
        (level,) = run_bench(BenchTarget.from_recipe(demo), opts).levels
    finally:
        server.stop()
    assert level.sim_clock is not None and level.sim_clock.time_scale == 0.0005
    assert level.sim_clock.behind_pct is not None and level.sim_clock.behind_pct > 100
    assert not level.valid
    assert any("fell behind its clock" in r and "time-scale 0.0005" in r for r in level.reasons)


def test_the_launch_stage_warns_of_a_scale_this_host_cannot_keep(
    simulator: Simulators, tmp_path: Path
) -> None:
    fast = simulator.tiny(REPRO_SIM_TIME_SCALE="0.0005")
    kept = simulator.tiny(REPRO_SIM_TIME_SCALE="50")
    try:
        assert "time-scale 0.0005 is below" in clock_warning(fast.url)
        assert clock_warning(kept.url) == ""
    finally:
        fast.stop()
        kept.stop()
