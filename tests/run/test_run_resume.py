"""Ctrl-C in the middle of `repro run`, then `--resume`: nothing finished is redone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from repro.runfolder import RunFolder
from tests.support.deployments import deployment_containers
from tests.support.ports import free_port

pytestmark = pytest.mark.docker
REPRO = str(Path(sys.executable).parent / "repro")


def _statuses(run_dir: Path) -> dict[str, str]:
    stages = json.loads(RunFolder(run_dir).stages_file.read_text())["stages"]
    return {stage["name"]: stage["status"] for stage in stages}


def test_interrupted_run_resumes_without_redoing_finished_work(
    repo_root: Path, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "REPRO_STATE_DIR": str(tmp_path / "state"),
        "REPRO_LOCKS_DIR": str(tmp_path / "locks"),
    }
    runs = tmp_path / "runs"
    process = subprocess.Popen(
        [REPRO, "run", "demo", "--runs-dir", str(runs), "--port", str(free_port())],
        cwd=repo_root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    first_level = None
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        found = [
            level
            for level in (RunFolder(run).bench.requests_file(1, 0) for run in runs.glob("*"))
            if level.is_file()
        ]
        if found:
            first_level = found[0]
            break
        time.sleep(0.2)
    assert first_level is not None, "the sweep never finished its first level"
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130 and "interrupted" in stderr and "Traceback" not in stderr
    assert not deployment_containers("demo", tmp_path / "state")

    run_dir = first_level.parents[2]
    before = _statuses(run_dir)
    assert before["launch"] == "done" and before["bench"] != "done"
    finished_level = first_level.read_bytes()

    resumed = subprocess.run(
        [REPRO, "run", "--resume", str(run_dir)],
        cwd=repo_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert set(_statuses(run_dir).values()) == {"done"}
    assert first_level.read_bytes() == finished_level  # the finished level was not redone
    summary = json.loads(RunFolder(run_dir).bench.summary_file.read_text())
    assert sorted(level["max_concurrency"] for level in summary["levels"]) == [1, 4, 16]
    assert RunFolder(run_dir).report_html_file.is_file()
    assert not deployment_containers("demo", tmp_path / "state")
