"""`repro run` stops only what it started: on SIGTERM during launch or bench it leaves no
container and a resumable run; a second run of a running recipe leaves that server alone."""

from __future__ import annotations

import json
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from repro.runfolder import RunFolder
from tests.support.cli import REPRO, isolated_env, repro
from tests.support.deployments import deployment_containers
from tests.support.ports import free_port

pytestmark = pytest.mark.docker


def _stages(run_dir: Path) -> dict[str, dict[str, str]]:
    stages = json.loads(RunFolder(run_dir).stages_file.read_text())["stages"]
    return {stage["name"]: stage for stage in stages}


def _terminate_when(
    process: subprocess.Popen[str], ready: Callable[[], bool], timeout: float = 300
) -> str:
    """SIGTERM the run once `ready()`; its stderr."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert process.poll() is None and time.monotonic() < deadline, process.stderr
        time.sleep(0.1)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    return stderr


def test_sigterm_during_launch_and_bench_leaves_nothing_and_resumes(
    repo_root: Path, tmp_path: Path
) -> None:
    env = isolated_env(tmp_path)
    runs = tmp_path / "runs"
    command = [REPRO, "run", "demo", "--runs-dir", str(runs), "--port", str(free_port())]
    process = subprocess.Popen(
        command, cwd=repo_root, env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    state = tmp_path / "state"
    stderr = _terminate_when(process, lambda: bool(deployment_containers("demo", state)))
    assert process.returncode == 128 + signal.SIGTERM, stderr[-2000:]
    assert "interrupted by SIGTERM" in stderr and "Traceback" not in stderr
    assert not deployment_containers("demo", tmp_path / "state")
    [run_dir] = runs.iterdir()
    launch = _stages(run_dir)["launch"]
    assert launch["status"] != "done" and "SIGTERM" in launch["summary"]

    resumed = subprocess.Popen(
        [REPRO, "run", "--resume", str(run_dir)],
        cwd=repo_root,
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    first_level = RunFolder(run_dir).bench.requests_file(1, 0)
    stderr = _terminate_when(resumed, first_level.is_file)
    assert resumed.returncode == 128 + signal.SIGTERM, stderr[-2000:]
    assert not deployment_containers("demo", tmp_path / "state")
    assert _stages(run_dir)["launch"]["status"] == "done"
    bench_run = json.loads(RunFolder(run_dir).bench.run_file.read_text())
    assert bench_run["status"] == "failed" and "SIGTERM" in bench_run["error"]
    # the server it stopped leaves its log, for why the numbers end there
    assert "ready to roll" in RunFolder(run_dir).server_log_file.read_text()

    finished = repro("run", "--resume", str(run_dir), cwd=repo_root, env=env)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert {stage["status"] for stage in _stages(run_dir).values()} == {"done"}
    assert not deployment_containers("demo", tmp_path / "state")


def test_a_second_run_of_a_running_recipe_leaves_that_server_alone(
    repo_root: Path, tmp_path: Path
) -> None:
    env = isolated_env(tmp_path)
    first_port = free_port()
    launched = repro("launch", "demo", "--port", str(first_port), cwd=repo_root, env=env)
    assert launched.returncode == 0, launched.stderr
    try:
        second = repro(
            "run", "demo", "--runs-dir", str(tmp_path / "runs"), "--port", str(free_port()),
            cwd=repo_root, env=env,
        )  # fmt: skip
        assert second.returncode != 0 and "already running" in second.stderr
        with urllib.request.urlopen(f"http://127.0.0.1:{first_port}/health", timeout=10) as r:
            assert r.status == 200
        assert deployment_containers("demo", tmp_path / "state")
    finally:
        repro("stop", "demo", cwd=repo_root, env=env)
    assert not deployment_containers("demo", tmp_path / "state")
