"""SIGTERM takes Ctrl-C's path in standalone commands: `repro bench` ends with the signal's
exit code, its run.json says failed (not "running") and its finished levels stay; `repro
launch` stops the container it started."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from repro.runfolder import RunFolder
from tests.support.cli import REPRO, isolated_env
from tests.support.simulator import DFLASH, Sim, Simulators


@pytest.fixture(scope="module")
def sim(simulator: Simulators) -> Iterator[Sim]:
    server = simulator.tiny(*DFLASH)
    yield server
    server.stop()


def _terminate_when(process: subprocess.Popen[str], path: Path, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    return stderr


def test_sigterm_to_bench_keeps_a_failed_resumable_run(sim: Sim, tmp_path: Path) -> None:
    out = tmp_path / "run"
    plan = ["--concurrency", "1,2", "--prompts", "40", "--input-len", "16", "--output-len", "32"]
    process = subprocess.Popen(
        [REPRO, "bench", "--url", sim.url, *plan, "--output", str(out)],
        cwd=tmp_path,
        env=isolated_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stderr = _terminate_when(process, RunFolder(out).requests_file(1, 0))
    assert process.returncode == 128 + signal.SIGTERM, stderr[-2000:]
    assert "interrupted by SIGTERM" in stderr and "Traceback" not in stderr
    run = json.loads(RunFolder(out).run_file.read_text())
    assert run["status"] == "failed" and "SIGTERM" in run["error"]


def test_sigterm_to_accept_keeps_the_finished_sets(
    sim: Sim, tmp_path: Path, repo_root: Path
) -> None:
    out = tmp_path / "acc"
    plan = ["--prompt-sets", "chat,code", "-n", "40", "--max-new-tokens", "64"]
    process = subprocess.Popen(
        [REPRO, "accept", "demo", "--url", sim.url, *plan, "--output", str(out)],
        cwd=repo_root,
        env=isolated_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stderr = _terminate_when(process, RunFolder(out).accept_file)
    assert process.returncode == 128 + signal.SIGTERM, stderr[-2000:]
    assert "interrupted by SIGTERM" in stderr and "Traceback" not in stderr
    run = json.loads(RunFolder(out).run_file.read_text())
    assert run["status"] == "failed" and "SIGTERM" in run["error"]
    assert json.loads(RunFolder(out).accept_file.read_text())["recipe_name"] == "demo"
