"""`repro campaign calibrate` priced before it starts: its estimate first, `--yes` past the
threshold, one drafter server on a machine, a simulator calibration that says it checks the
simulator only, and a fitted profile that `campaign plan --profile` takes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from repro.campaign.plan import LAUNCH_OVERHEAD_S, WEIGHTS_READ_GB_PER_S
from repro.recipe.hardware import weights_gb
from repro.units import human_seconds
from tests.support.cli import REPRO, isolated_env, repro


def test_on_a_machine_it_prints_its_estimate_and_starts_only_with_yes(
    repo_root: Path, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    result = subprocess.run(
        [REPRO, "campaign", "calibrate", "campaigns/kimi26-b200.yaml", "--campaigns-dir",
         str(runs)],
        cwd=repo_root, env=isolated_env(tmp_path), stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr[-2000:]
    said = " ".join(result.stderr.split())
    # one drafter server beside the plain one: two weight loads of the model at the plan's
    # assumed rate, priced before anything starts
    assert (
        "calibration sweep on this machine: 2 servers (plain, forced-2), 6 levels, about " in said
    )
    model = weights_gb("moonshotai/Kimi-K2.6", None) or 0.0
    drafter = weights_gb("z-lab/Kimi-K2.6-DFlash", None) or 0.0
    loads = (2 * model + drafter) / WEIGHTS_READ_GB_PER_S
    assert f"2 weight loads, {human_seconds(loads)}; " in said
    assert f"starts {human_seconds(2 * LAUNCH_OVERHEAD_S)}" in said
    assert "not started: the calibration sweep is estimated at " in said
    assert "hint: pass --yes to start it" in said
    assert "Traceback" not in result.stderr
    assert not runs.exists()  # nothing half-made


@pytest.mark.docker
def test_a_simulator_calibration_says_it_checks_the_simulator_and_its_profile_plans(
    repo_root: Path, tmp_path: Path
) -> None:
    env = isolated_env(tmp_path)
    campaign = tmp_path / "qwen.yaml"
    campaign.write_text(
        "name: qwen-tp1\nmachine: rtx-pro-6000x1\npoints:\n"
        "  - {recipe: qwen36-27b-tp1-dflash, name: plain,\n"
        "     set: {drafter: null, speculative: null, accept: null}}\n"
        "  - {recipe: qwen36-27b-tp1-dflash, name: dflash, set: {accept: null}}\n"
        "bench: {concurrencies: [1, 4], input_len: 256, output_len: 64, dataset: random,\n"
        "        prompts_per_level: 16, warmup: 1}\n"
    )
    result = repro(
        "campaign", "calibrate", str(campaign), "--sim", "qwen36-27b-tp4-rtx6000",
        "--time-scale", "0.2", "--concurrencies", "1,4",
        "--campaigns-dir", str(tmp_path / "runs"), "--json", cwd=repo_root, env=env,
        timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    said = " ".join(result.stderr.split())
    first = said.index("calibration sweep on the simulator (profile qwen36-27b-tp4-rtx6000)")
    assert first < said.index("campaign qwen-tp1-calibration")  # priced before it starts
    # the simulator's default: three forced lengths, a server each (no weights to load)
    assert "4 servers (plain, forced-1, forced-2, forced-4), 8 levels, about " in said
    assert "this checks the simulator only" in said
    data = json.loads(result.stdout)
    assert data["checks"].startswith("the simulator only (profile qwen36-27b-tp4-rtx6000")
    planned = repro(
        "campaign", "plan", str(campaign), "--profile", data["profile"], "--json",
        cwd=repo_root, env=env,
    )  # fmt: skip
    assert planned.returncode == 0, planned.stderr[-2000:]
    points = {p["name"]: p for p in json.loads(planned.stdout)["points"]}
    fitted = json.loads(Path(data["profile"]).read_text())["name"]
    assert {p["profile"] for p in points.values()} == {fitted}
    assert all(p["predicted"] for p in points.values())
    # the fit measured the first token: only the drafter's acceptance stays assumed
    assert points["plain"]["assumed"] == []
    assert points["dflash"]["assumed"] == ["DFLASH acceptance"]


def test_weights_of_unknown_size_are_never_priced_as_free(repo_root: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [REPRO, "campaign", "calibrate", "campaigns/kimi26-b300.yaml", "--campaigns-dir",
         str(tmp_path / "runs")],
        cwd=repo_root, env=isolated_env(tmp_path), stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr[-2000:]
    said = " ".join(result.stderr.split())
    assert "not counted, size unknown: nvidia/Kimi-K2.6-NVFP4" in said
    assert "without loading nvidia/Kimi-K2.6-NVFP4 (size unknown), so it may take far" in said
    assert "pass --yes to start it" in said and not (tmp_path / "runs").exists()
