"""`repro accept` writes each prompt set when it ends: a server killed during the second set
loses nothing of the first (one error line, run.json "failed"), and `--resume` measures only
the set still missing."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from repro.runfolder import RunFolder
from tests.support.cli import REPRO, isolated_env, repro
from tests.support.simulator import DFLASH, Simulators


def _sets(run_dir: Path) -> list[str]:
    path = RunFolder(run_dir).accept_file
    if not path.is_file():
        return []
    return [s["prompt_set"] for s in json.loads(path.read_text())["sets"]]


def test_a_server_killed_in_the_second_set_keeps_the_first(
    simulator: Simulators, tmp_path: Path, repo_root: Path
) -> None:
    env = isolated_env(tmp_path)
    out = tmp_path / "acc"
    plan = ["--prompt-sets", "chat,code", "-n", "6", "--max-new-tokens", "48"]
    first = simulator.tiny(*DFLASH, REPRO_SIM_TIME_SCALE="1.5")
    try:
        process = subprocess.Popen(
            [REPRO, "accept", "demo", "--url", first.url, *plan, "--output", str(out)],
            cwd=repo_root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while _sets(out) != ["chat"]:
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.05)
    finally:
        first.stop()  # the server dies during the second set
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 1, stderr
    assert "Traceback" not in stderr and "--resume" in stderr
    assert _sets(out) == ["chat"]
    run = json.loads(RunFolder(out).run_file.read_text())
    assert run["status"] == "failed" and run["error"]
    kept = json.loads(RunFolder(out).accept_file.read_text())["sets"][0]

    second = simulator.tiny(*DFLASH, REPRO_SIM_TIME_SCALE="0.1")
    try:
        resumed = repro(
            "accept", "demo", "--url", second.url, *plan, "--resume", str(out),
            cwd=repo_root, env=env, timeout=180,
        )  # fmt: skip
    finally:
        second.stop()
    assert resumed.returncode == 0, resumed.stderr
    assert _sets(out) == ["chat", "code"]
    assert json.loads(RunFolder(out).accept_file.read_text())["sets"][0] == kept  # not redone
    assert json.loads(RunFolder(out).run_file.read_text())["status"] == "complete"

    other = repro(
        "accept", "demo", "--url", "http://127.0.0.1:9", "-n", "7", "--resume", str(out),
        cwd=repo_root, env=env, timeout=60,
    )  # fmt: skip
    assert other.returncode == 1 and "Traceback" not in other.stderr
