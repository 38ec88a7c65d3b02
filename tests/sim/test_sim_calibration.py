"""Each calibrated profile reproduces its measurements on the workload that produced them,
no extrapolated profile contradicts a measured ranking, and a run outside what was measured
is labelled extrapolated."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from repro.sim.calibration import (
    check,
    ranking_conflicts,
    run_provenance,
    steady_decode_tok_s,
)
from repro.sim.config import resolve
from repro.sim.profile import ProfileError, list_profiles, load_profile


def test_every_calibrated_profile_reproduces_its_measurements() -> None:
    calibrated = [p for p in list_profiles() if p.provenance.startswith("calibrated")]
    assert {p.name for p in calibrated} >= {"kimi26-ep4-rtx6000", "kimi26-tp8-rtx6000"}
    for profile in calibrated:
        checks = check(profile)
        assert checks, f"{profile.name} is calibrated but states no measurement"
        for c in checks:
            assert c.ok, f"{profile.name}: {c.measurement.label()} -> {c.predicted:.1f}"
    for profile in list_profiles():
        assert profile.assumed, f"{profile.name} does not say what is assumed"


def test_ep4_steady_decode_and_tp8_single_stream_hit_the_measured_numbers() -> None:
    (ep4,) = check(load_profile("kimi26-ep4-rtx6000"))
    assert (ep4.measurement.running, ep4.measurement.context_tokens) == (256, 2048)
    assert ep4.predicted == pytest.approx(1530, rel=0.05)
    (tp8,) = check(load_profile("kimi26-tp8-rtx6000"))
    assert tp8.measurement.running == 1 and tp8.measurement.server_args == ()
    assert tp8.predicted == pytest.approx(97.9, rel=0.05)


def test_measured_rankings_hold_across_the_box_layouts() -> None:
    assert ranking_conflicts() == []
    names = ("ep4", "ep8", "pp8", "tp8")
    profiles = {n: load_profile(f"kimi26-{n}-rtx6000") for n in names}
    peak = {n: steady_decode_tok_s(p, 256, 2048) for n, p in profiles.items()}
    single = {n: steady_decode_tok_s(p, 1, 1536) for n, p in profiles.items()}
    assert max(peak, key=lambda n: peak[n]) == "ep4"
    assert max(single, key=lambda n: single[n]) == "tp8"
    no_graph = steady_decode_tok_s(profiles["tp8"], 1, 1536, ("--disable-cuda-graph",))
    assert no_graph < single["ep4"]


def test_an_extrapolation_that_outranks_the_measured_best_is_named() -> None:
    ep4, ep8 = load_profile("kimi26-ep4-rtx6000"), load_profile("kimi26-ep8-rtx6000")
    faster = replace(ep8, timing=replace(ep8.timing, decode_per_req_ms=0.45))
    (conflict,) = ranking_conflicts([ep4, faster])
    assert conflict.startswith("kimi26-ep8-rtx6000 gives") and "kimi26-ep4-rtx6000" in conflict


def test_a_profile_off_its_measurement_fails_the_check() -> None:
    tp8 = load_profile("kimi26-tp8-rtx6000")
    slower = replace(tp8, timing=replace(tp8.timing, decode_fixed_ms=10.0))
    (c,) = check(slower)
    assert not c.ok and c.error < -0.05


def test_runs_outside_the_measurements_are_labelled_extrapolated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REPRO_SIM_PROFILE", "kimi26-tp8-rtx6000")
    graphs = resolve(["--model-path", "m"])
    assert run_provenance(graphs).startswith("calibrated: 97.9 tok/s")
    eager = run_provenance(resolve(["--model-path", "m", "--disable-cuda-graph"]))
    assert eager.startswith("extrapolated: from kimi26-tp8-rtx6000")
    assert "CUDA graphs off (fixed cost x2.5, assumed)" in eager
    rendered = ["--cuda-graph-backend-decode", "disabled"]  # kimi26-tp8-nograph's flags
    assert run_provenance(resolve(["--model-path", "m", *rendered])) == eager
    monkeypatch.setenv("REPRO_SIM_PROFILE", "kimi26-ep4-rtx6000")
    drafter = ["--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", "d"]
    dflash = run_provenance(resolve(["--model-path", "m", *drafter]))
    assert dflash.startswith("extrapolated:") and "speculative DFLASH" in dflash
    monkeypatch.setenv("REPRO_SIM_PROFILE", "kimi26-ep8-rtx6000")
    ep8 = run_provenance(resolve(["--model-path", "m"]))
    assert ep8.startswith("extrapolated: from kimi26-ep4-rtx6000")


def test_a_measurement_without_its_workload_is_refused(tmp_path: Path) -> None:
    data = json.loads(Path(load_profile("kimi26-tp8-rtx6000").path).read_text())
    del data["measured"][0]["running"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ProfileError, match="each `measured` entry is an object with `value`"):
        load_profile(str(path))
