"""`repro run R 2>&1 | tee log`: Ctrl-C (which stops `tee` too) and a reader that goes away
(SIGPIPE) are handled as Ctrl-C on a terminal: the server is stopped, the run is marked
interrupted and can be resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from repro.runfolder import RunFolder
from tests.support.cli import REPRO, isolated_env
from tests.support.deployments import deployment_containers
from tests.support.ports import free_port

pytestmark = pytest.mark.docker


def _piped_run(repo_root: Path, tmp_path: Path) -> tuple[subprocess.Popen[bytes], ...]:
    """`repro run demo 2>&1 | tee LOG` as a shell builds it: one process group, a real pipe."""
    command = [REPRO, "run", "demo", "--runs-dir", str(tmp_path / "runs")]
    run = subprocess.Popen(
        [*command, "--port", str(free_port())],
        cwd=repo_root,
        env=isolated_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        process_group=0,
    )
    assert run.stdout is not None
    tee = subprocess.Popen(
        ["tee", str(tmp_path / "log")],
        stdin=run.stdout,
        stdout=subprocess.DEVNULL,
        process_group=run.pid,
    )
    run.stdout.close()  # the pipe's read end is tee's alone, as in a shell
    return run, tee


def _wait_for_bench(run: subprocess.Popen[bytes], tmp_path: Path) -> Path:
    """The run folder, once its sweep has started (progress bars redrawing)."""
    deadline = time.monotonic() + 300
    while True:
        assert run.poll() is None and time.monotonic() < deadline, "the run ended early"
        levels = list((tmp_path / "runs").glob("*/bench/levels/*.jsonl"))
        if levels:
            return levels[0].parents[2]
        time.sleep(0.1)


def _stages(run_dir: Path) -> dict[str, dict[str, str]]:
    stages = json.loads(RunFolder(run_dir).stages_file.read_text())["stages"]
    return {stage["name"]: stage for stage in stages}


@pytest.mark.parametrize("how", ["ctrl-c", "reader-gone"])
def test_an_interrupt_under_a_pipe_stops_the_server_and_marks_the_run(
    repo_root: Path, tmp_path: Path, how: str
) -> None:
    run, tee = _piped_run(repo_root, tmp_path)
    try:
        run_dir = _wait_for_bench(run, tmp_path)
        if how == "ctrl-c":  # the terminal sends SIGINT to the whole pipeline
            os.killpg(run.pid, signal.SIGINT)
        else:  # the reader dies alone (`| head`): repro's next write meets a closed pipe
            tee.kill()
        code = run.wait(timeout=180)
    finally:
        if run.poll() is None:
            run.kill()
        tee.wait(timeout=30)
    expected = signal.SIGINT if how == "ctrl-c" else signal.SIGPIPE
    assert code == 128 + expected
    assert not deployment_containers("demo", tmp_path / "state")
    bench = _stages(run_dir)["bench"]
    assert bench["status"] == "failed"
    assert bench["summary"] == f"interrupted ({signal.Signals(expected).name})"
    assert _stages(run_dir)["stop"]["status"] != "done"
    listed = subprocess.run(
        [REPRO, "runs", "--runs-dir", str(tmp_path / "runs"), "--json"],
        env=isolated_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "interrupted at bench" in listed.stdout, listed.stdout + listed.stderr
    if how == "ctrl-c":  # tee read until it was stopped: the log ends in the sweep
        assert "bench" in (tmp_path / "log").read_text()
