"""Open-loop levels against the simulator: a request-rate ladder with gamma burstiness, its
schedule kept in the record, levels sent behind their schedule judged invalid, resume by
rate, and the plan's rules on the command line and in recipes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from repro.bench import BenchOptions, RequestResult, run_bench
from repro.bench.arrivals import level_seed, rate_schedule
from repro.bench.target import BenchTarget
from repro.bench.validity import schedule_reasons
from repro.cli import main
from repro.errors import ReproError
from repro.runfolder import RunFolder
from repro.schema.level import Arrival, Level, Load
from repro.schema.recipe import Bench
from tests.support.simulator import Sim


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_rate_ladder_with_burstiness_keeps_its_schedule(sim_spec: Sim, tmp_path: Path) -> None:
    out = tmp_path / "ladder"
    args = ["bench", "demo", "--url", sim_spec.url, "--request-rate", "2,4,8",
            "--burstiness", "0.5", "--prompts", "12", "--input-len", "16", "--output-len", "8",
            "--output", str(out), "--json"]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    levels = [Level.model_validate(lv) for lv in json.loads(res.stdout)["levels"]]
    assert [lv.load for lv in levels] == [Load("rate", 2), Load("rate", 4), Load("rate", 8)]
    for level in levels:
        arrival = level.arrival
        assert arrival is not None and arrival.mode == "gamma" and arrival.burstiness == 0.5
        assert arrival.max_concurrency is None and arrival.achieved_rate is not None
        rows = _rows(RunFolder(out).requests_file(level.load, 0))
        offered = [r["offered_s"] for r in rows]
        # the schedule drawn for this level, kept request by request beside the actual send
        assert offered == pytest.approx(
            rate_schedule(12, level.load.value, 0.5, level_seed(level.load, 0))
        )
        assert all(r["ok"] for r in rows)
    for label in ("r=2/s", "r=4/s", "r=8/s"):
        assert label in res.stderr
    run = json.loads(RunFolder(out).run_file.read_text())["workload"]
    assert run["request_rate"] == [2.0, 4.0, 8.0] and run["burstiness"] == 0.5
    report = CliRunner().invoke(main, ["report", str(out)])
    assert report.exit_code == 0 and "r=8/s" in report.output, report.output
    compared = CliRunner().invoke(main, ["compare", str(out), str(out), "--json"])
    assert compared.exit_code == 0, compared.output
    assert json.loads(compared.stdout)["matched"] == ["r=2/s", "r=4/s", "r=8/s"]


def test_a_cap_that_holds_sends_back_makes_the_level_invalid(
    sim_spec: Sim, demo: Any, tmp_path: Path
) -> None:
    """500 req/s with one request in flight: each send waits for the last to finish, so the
    sends fall ever further behind the schedule (later on a loaded host, never earlier)."""
    opts = BenchOptions(
        url=sim_spec.url, request_rates=[500.0], max_concurrency=1, prompts=8, input_len=16,
        output_len=32, runs_dir=tmp_path,
    )  # fmt: skip
    (level,) = run_bench(BenchTarget.from_recipe(demo), opts).levels
    assert level.arrival is not None and level.arrival.max_concurrency == 1
    assert not level.valid
    assert any(r.startswith("sends fell behind the schedule") for r in level.reasons)
    assert any("req/s of the" in r for r in level.reasons), level.reasons


def test_resume_measures_only_the_missing_rate(sim_spec: Sim, demo: Any, tmp_path: Path) -> None:
    opts = BenchOptions(
        url=sim_spec.url, request_rates=[4.0, 8.0], prompts=4, input_len=16, output_len=8,
        runs_dir=tmp_path,
    )  # fmt: skip
    first = run_bench(BenchTarget.from_recipe(demo), opts)
    RunFolder(first.run_dir).requests_file(Load("rate", 8), 0).unlink()  # as if it crashed

    started: list[Load] = []

    class Seen:
        def level_started(self, load: Load, repeat: int, total: int) -> None:
            started.append(load)

        def request_done(self, result: RequestResult) -> None:
            pass

        def level_done(self, summary: Level) -> None:
            pass

    resumed = run_bench(None, BenchOptions(resume=first.run_dir), Seen())
    assert started == [Load("rate", 8)]
    assert sorted(lv.load for lv in resumed.levels) == [Load("rate", 4), Load("rate", 8)]


def test_gamma_gaps_keep_the_mean_rate_and_burstiness_sets_their_spread() -> None:
    for burstiness in (0.25, 1.0, 4.0):
        gaps = np.diff(rate_schedule(20_000, 4.0, burstiness, seed=1))
        assert gaps.mean() == pytest.approx(0.25, rel=0.03)
        # gamma of shape k: coefficient of variation 1/sqrt(k) (Poisson: 1)
        assert gaps.std() / gaps.mean() == pytest.approx(burstiness**-0.5, rel=0.05)
    assert rate_schedule(3, 4.0, 1.0, seed=1)[0] == 0.0


def test_schedule_reasons_name_late_sends_and_a_low_rate() -> None:
    kept = Arrival(mode="poisson", offered_rate=10.0, achieved_rate=9.8, send_lag_p99_ms=20.0)
    assert schedule_reasons(kept) == []
    late = kept.model_copy(update={"send_lag_p99_ms": 400.0, "achieved_rate": 5.0})
    assert [r.split(":")[0] for r in schedule_reasons(late)] == [
        "sends fell behind the schedule",
        "sent 5.00 req/s of the 10.00 offered",
    ]


def test_the_plan_takes_one_kind_of_level() -> None:
    assert Bench.model_validate({"request_rate": 2.0}).request_rate == [2.0]  # older recipes
    with pytest.raises(ValidationError, match="request_rate or trace"):
        Bench.model_validate({"request_rate": [2.0], "trace": "demo"})
    with pytest.raises(ValidationError, match="must not repeat"):
        Bench.model_validate({"request_rate": [2.0, 2.0]})
    both = CliRunner().invoke(main, ["bench", "demo", "--concurrency", "1", "--request-rate", "2"])
    assert both.exit_code == 2 and "--request-rate cannot be combined with --concurrency" in (
        both.output
    )
    bad = CliRunner().invoke(main, ["bench", "demo", "--request-rate", "2,fast"])
    assert bad.exit_code == 1 and "--request-rate '2,fast'" in bad.output
    assert "Traceback" not in bad.output


def test_a_run_from_before_rate_levels_is_not_resumed_as_one(
    sim_spec: Sim, demo: Any, tmp_path: Path
) -> None:
    opts = BenchOptions(url=sim_spec.url, concurrencies=[1], prompts=2, runs_dir=tmp_path)
    run_dir = run_bench(BenchTarget.from_recipe(demo), opts).run_dir
    run_file = RunFolder(run_dir).run_file
    run = json.loads(run_file.read_text())
    run["workload"]["request_rate"] = 50.0  # how runs before rate levels wrote Poisson arrivals
    run_file.write_text(json.dumps(run))
    with pytest.raises(ReproError, match="Poisson arrivals at every concurrency"):
        run_bench(None, BenchOptions(resume=run_dir))
