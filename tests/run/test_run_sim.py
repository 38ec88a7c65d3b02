"""`repro run RECIPE --sim`: a GPU recipe's own argv on the simulator image, end to end on the
CPU, then `repro compare` and `repro report` on the folder it printed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from repro.runfolder import RunFolder
from tests.support.cli import repro
from tests.support.deployments import deployment_containers
from tests.support.ports import free_port

pytestmark = pytest.mark.docker


def test_kimi_recipe_runs_on_the_simulator_and_compares(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPRO_STATE_DIR", str(tmp_path / "state"))
    runs = tmp_path / "runs"
    result = repro(
        "run", "kimi26-ep4-dflash", "--sim", "--time-scale", "0", "--port", str(free_port()),
        "--runs-dir", str(runs), cwd=repo_root,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    run_dir = Path(result.stdout.strip())  # stdout is the run folder alone
    stages = json.loads(RunFolder(run_dir).stages_file.read_text())["stages"]
    assert [s["status"] for s in stages] == ["done"] * 9
    doctor = next(s for s in stages if s["name"] == "doctor")
    assert "weight and GPU checks skipped" in doctor["summary"]
    server = json.loads(RunFolder(run_dir).bench.server_info_file.read_text())
    assert server["sim_profile"] == "kimi26-ep4-rtx6000" and server["sim_time_scale"] == 0
    # a drafter on the EP4 profile: its acceptance is assumed, so the run is extrapolated
    assert server["sim_provenance"].startswith("extrapolated: from kimi26-ep4-rtx6000")
    argv = server["launch_command"]  # the recipe's own flags reached the simulator
    assert "--ep-size" in argv and "DFLASH" in argv and "moonshotai/Kimi-K2.6" in argv
    assert not (repo_root / "locks" / "kimi26-ep4-dflash-sim.lock.json").exists()
    context = json.loads(RunFolder(run_dir).context_file.read_text())
    assert context["ref"].endswith("recipes/kimi26-ep4-dflash-sim.yaml")  # what --resume reads
    assert not deployment_containers("kimi26-ep4-dflash-sim")

    twin = shutil.copytree(run_dir, runs / "second", symlinks=True)
    compared = repro("compare", str(run_dir), str(twin), "--json", cwd=repo_root)
    assert compared.returncode == 0, compared.stderr
    data = json.loads(compared.stdout)
    assert data["a_label"] != data["b_label"]
    assert data["points"] and all(p["direction"] == "same" for p in data["points"])
    shown = repro("report", str(run_dir), cwd=repo_root)
    assert "sim kimi26-ep4-rtx6000 (extrapolated), time-scale 0" in shown.stdout


def test_a_ddtree_recipe_runs_on_a_simulator_standing_in_for_its_image(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPRO_STATE_DIR", str(tmp_path / "state"))
    result = repro(
        "run", "qwen36-27b-tp1-dflash-ddtree-tree64", "--sim", "--time-scale", "0",
        "--port", str(free_port()), "--runs-dir", str(tmp_path / "runs"), cwd=repo_root,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    folder = RunFolder(Path(result.stdout.strip()))
    stages = json.loads(folder.stages_file.read_text())["stages"]
    assert [s["status"] for s in stages] == ["done"] * 9
    # the simulator stood in for the DDTree image: SGLang 0.5.15 with DDTREE registered
    assert (folder.sim_images_dir / "sim-sglang-0.5.15-cu13-ddtree.yaml").is_file()
    server = json.loads(folder.bench.server_info_file.read_text())
    assert server["version"] == "0.5.15" and "DDTREE" in server["sim_speculative_registry"]
    assert server["speculative_ddtree_budget"] == 64
    # budget 64 is one of the profile's measurements: the run is calibrated, not extrapolated
    assert server["sim_provenance"].startswith("calibrated")
    assert not deployment_containers("qwen36-27b-tp1-dflash-ddtree-tree64-sim")
