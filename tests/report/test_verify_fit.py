"""The verify-step fit (repro.report.verifyfit, benchmarks/verify_cost_fit.py) on records of a
forced-acceptance sweep made by the simulator, whose step costs are known (profile demo):
a check of the fit code, not a claim about any GPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from repro.bench import BenchOptions, BenchTarget, run_bench
from repro.report.records import load_runs
from repro.report.verifyfit import Point, fit, leave_one_out, points, record_folders, twins
from repro.sim.profile import load_profile
from tests.support.simulator import Simulators

REPO = Path(__file__).resolve().parents[2]
H100 = REPO / "tests" / "fixtures" / "h100-dflash-sweep"  # a real sweep (its README)
ENGINE = REPO / "tests" / "fixtures" / "h100-gpu-engine-2026-12-07"  # a second launch
SCALE = 1.0  # a busy shared host keeps it; invalid levels are left out
# (draft tokens, forced length); (0, None): no drafter
SWEEP = [(0, None), (8, 1.0), (8, 2.0), (8, 4.0), (16, 2.0), (16, 6.0)]


def _sweep(simulator: Simulators, folder: Path) -> list[Path]:
    records = []
    for tokens, length in SWEEP:
        args = ["--model-path", "repro-sim/tiny-chat"]
        env = {"REPRO_SIM_PROFILE": "demo", "REPRO_SIM_TIME_SCALE": str(SCALE),
               "REPRO_SIM_LOAD_SECONDS": "0", "REPRO_SIM_SEED": "0"}  # fmt: skip
        if tokens:
            args += ["--speculative-algorithm", "DFLASH",
                     "--speculative-draft-model-path", "repro-sim/tiny-chat-dflash",
                     "--speculative-num-draft-tokens", str(tokens)]  # fmt: skip
            env["SGLANG_SIMULATE_ACC_LEN"] = str(length)
        sim = simulator(args, env)
        try:
            out = folder / f"t{tokens}-a{length}"
            opts = BenchOptions(
                url=sim.url, concurrencies=[1, 4, 8], input_len=32, output_len=64, prompts=16,
                output=out,
            )  # fmt: skip
            run_bench(BenchTarget.from_url(sim.url), opts)
            records.append(out)
        finally:
            sim.stop()
    return records


def _points(records: list[Path]) -> list[Point]:
    return [p for run in load_runs(records) for p in points(run)]


@pytest.fixture(scope="module")
def records(simulator: Simulators, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return _sweep(simulator, tmp_path_factory.mktemp("sweep"))


def test_the_fit_finds_the_simulators_step_cost_and_predicts_held_out_levels(
    records: list[Path],
) -> None:
    data = _points(records)
    assert len(data) >= 2 * len(SWEEP)  # a level the busy host could not keep is left out
    forced = [p for p in data if p.forced]
    assert {p.committed for p in forced} <= {1.0, 2.0, 4.0, 6.0}
    assert all(p.concurrency in (1, 4, 8) for p in data)
    coefficients = fit(data).coefficients
    demo = load_profile("demo")
    assert coefficients["decode_fixed_ms"] == pytest.approx(demo.timing.decode_fixed_ms, rel=0.25)
    # the simulator's step cost does not grow with committed tokens
    assert abs(coefficients["accept_ms_per_token"]) < demo.timing.decode_per_req_ms
    held = leave_one_out(data)
    errors = sorted(abs(h.error) for h in held)
    assert errors[len(errors) // 2] < 0.15, [(h.point, round(h.error, 3)) for h in held]


def test_the_benchmark_prints_each_held_out_point_and_writes_a_calibrated_profile(
    records: list[Path], tmp_path: Path
) -> None:
    profile_path = tmp_path / "fitted.json"
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "verify_cost_fit.py"),
         *map(str, records), "--profile-out", str(profile_path), "--name", "sim-check"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines if not line.startswith("profile: "))
    count = len(_points(records))
    assert sum(1 for line in lines if line.startswith(("no drafter c=", "T="))) == count
    profile = load_profile(str(profile_path))
    assert profile.provenance.startswith(f"calibrated: {count} levels of 6 bench records")
    data = json.loads(profile_path.read_text())
    assert sorted(data["fit"]["sources"]) == sorted(map(str, records))
    assert len(data["fit"]["leave_one_out"]) == count
    assert profile.spec("DFLASH").reference_draft_tokens == 16


def _h100(*more: Path) -> list[Point]:
    return _points(record_folders([H100 / "b8", H100 / "b16", *more]))


def test_on_the_h100_sweep_levels_that_paused_or_queued_are_named_from_their_records() -> None:
    data = _h100()
    assert len(data) == 52
    odd = {p.name: p.anomaly for p in data if p.anomaly}
    # T=16 forced 4 at c=48 gave most of its first tokens after 0.77 s; the DFLASH servers
    # admitted 45-47 of 48, the rest waited for the whole batch (27 and 29 at once on average)
    assert odd == {
        "T=8 forced 4 c=48": "queued: 29.3 of 48 at once",
        "T=8 accept 1.00543 c=16": "paused: first token 316 ms, 33 steps",
        "T=16 forced 1 c=48": "queued: 27.0 of 48 at once",
        "T=16 forced 4 c=48": "paused: first token 583 ms, 57 steps",
    }
    # left out of the fit: the paused level's steps (15 ms, the others' 10) move nothing
    assert fit(data) == fit([p for p in data if p.anomaly is None])


def test_on_the_h100_sweep_a_held_out_level_is_predicted_within_a_median_5_percent() -> None:
    held = leave_one_out(_h100())
    measured = sorted(abs(h.error) for h in held if h.anomaly is None)
    assert len(measured) == 48
    assert measured[len(measured) // 2] <= 0.05
    # not 15 %: servers doing the same work ran up to 16 % apart in this launch, and 28 % on
    # two launches (the next test); the worst is DFLASH b8 with its random drafter at c=48
    assert measured[-1] < 0.25
    worst = max(held, key=lambda h: abs(h.error))
    assert worst.point == "T=16 forced 4 c=48" and worst.anomaly is not None


def test_on_the_h100_sweep_the_first_token_follows_the_closed_loop() -> None:
    data = [p for p in _h100() if p.anomaly is None]
    errors = sorted(
        abs(fit(data[:i] + data[i + 1 :]).ttft_ms(p) / p.ttft_ms - 1) for i, p in enumerate(data)
    )
    # prefilling every prompt of a level in one batch (prefill + n x per request) missed a
    # held-out first token by a median 24 %: the first arrival is prefilled alone
    assert errors[len(errors) // 2] < 0.12
    assert fit(data).prefill_wait_ms > 10.0


def test_the_same_level_on_two_launches_is_the_floor_the_fit_is_held_to() -> None:
    data = _h100(ENGINE)
    spread = {name: max(v) / min(v) - 1 for name, v in twins(data)}
    # plain, DFLASH b8 with its random drafter and forced 8, launched again on another H100
    assert len(spread) == 9
    assert spread["T=8 accept c=48"] > 0.25 and spread["T=8 forced 8 c=1"] < 0.05
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "verify_cost_fit.py"),
         str(H100 / "b8"), str(H100 / "b16"), str(ENGINE)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert "  no drafter c=4               paused: first token 527 ms, 106 steps" in lines
    assert lines[-1] == "spread: median 12.8%, worst 27.6%"
