"""Profiles: each loads, states its assumptions, and reproduces the numbers it cites."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.sim.calibration import mean_accepted, steady_decode_tok_s
from repro.sim.profile import accept_cdf, list_profiles, load_profile

from .simproc import SRC, free_port, get_json


def test_every_profile_loads_with_assumptions() -> None:
    names = {p.name for p in list_profiles()}
    assert {"demo", "instant", "kimi26-ep4-rtx6000", "kimi26-tp8-b200"} <= names
    assert "qwen36-27b-tp1-rtx6000" in names
    for profile in list_profiles():
        assert len(profile.assumptions) > 40, profile.name
        assert profile.timing.max_running_requests > 0 and profile.timing.kv_tokens > 0


def test_acceptance_model_hits_the_stated_mean() -> None:
    spec = load_profile("demo").spec("DFLASH")
    for category, mean in spec.accept_length.items():
        cdf = accept_cdf(spec, category, 15, 16)
        assert abs(1 + mean_accepted(cdf) - mean) < 1e-6
    # fewer draft tokens, same per-draft acceptance: a lower mean, capped by the drafts
    short = accept_cdf(spec, "math", 3, 4)
    assert len(short) == 4 and 1 + mean_accepted(short) < spec.accept_length["math"]


def test_cli_profiles_and_serve(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["sim", "profiles", "--json"])
    assert result.exit_code == 0
    listed = {p["name"]: p for p in json.loads(result.output)}
    assert "measured" in listed["kimi26-ep4-rtx6000"]["assumptions"].lower()
    result = CliRunner().invoke(main, ["sim", "serve", "--profile", "nope"])
    assert result.exit_code == 1 and "unknown simulator profile 'nope'" in result.output
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPRO_SIM_")}
    env["PYTHONPATH"] = str(SRC)
    log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115
    repro = str(Path(sys.executable).parent / "repro")
    argv = ["sim", "serve", "--port", str(port), "--profile", "instant"]
    proc = subprocess.Popen(
        [repro, *argv, "--", "--served-model-name", "tiny"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while "fired up" not in (tmp_path / "serve.log").read_text():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        info = get_json(f"http://127.0.0.1:{port}/model_info")
        assert info["served_model_name"] == "tiny" and info["sim_profile"] == "instant"
        assert info["model_path"] == "repro-sim/instant"
    finally:
        proc.terminate()
        assert proc.wait(20) == 0
        log.close()


def test_layout_profiles_model_their_own_timing() -> None:
    """PP pays every stage for one request (the bubble) and fills the pipeline with more;
    EP pays its all-to-all, so EP8 over PCIe is slower than EP4 for one stream."""

    def rate(name: str, n: int) -> float:
        return steady_decode_tok_s(load_profile(name), n, 2000)

    tp8 = {n: rate("kimi26-tp8-rtx6000", n) for n in (1, 256)}
    pp8 = {n: rate("kimi26-pp8-rtx6000", n) for n in (1, 256)}
    assert pp8[1] < tp8[1] / 3  # one request crosses eight stages in turn
    assert pp8[256] > tp8[256]  # a full pipeline, no all-reduce
    assert rate("kimi26-ep8-rtx6000", 1) < rate("kimi26-ep4-rtx6000", 1)
    b300 = rate("kimi26-tp8-b300", 1)
    assert b300 == pytest.approx(rate("kimi26-tp8-b200", 1))  # same HBM bandwidth


def test_profile_sections_are_checked(tmp_path: Path) -> None:
    bad = json.loads((Path(load_profile("kimi26-pp8-rtx6000").path)).read_text())
    bad["pipeline"]["stage"] = 8
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match=r"unknown pipeline field\(s\) \['stage'\]"):
        load_profile(str(path))
