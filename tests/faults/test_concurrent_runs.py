"""Two `repro run` of one recipe started at the same moment (different --runs-dir, one state
dir): one runs, the other is refused up front; the refused one never stops the other's
server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from repro.runfolder import RunFolder
from tests.support.cli import REPRO, isolated_env
from tests.support.deployments import deployment_containers
from tests.support.ports import free_port

pytestmark = pytest.mark.docker


def test_two_runs_at_once_one_runs_the_other_is_refused(repo_root: Path, tmp_path: Path) -> None:
    env = isolated_env(tmp_path)

    def start(runs: Path) -> subprocess.Popen[str]:
        command = [REPRO, "run", "demo", "--runs-dir", str(runs), "--port", str(free_port())]
        return subprocess.Popen(
            command, cwd=repo_root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip

    processes = [start(tmp_path / f"runs{i}") for i in range(2)]
    outcomes = [(p.wait(timeout=900), p.communicate()[1]) for p in processes]
    codes = sorted(code for code, _ in outcomes)
    assert codes == [0, 1], [err[-1500:] for _, err in outcomes]
    refused = next(err for code, err in outcomes if code == 1)
    assert "in use by another repro process" in refused and "Traceback" not in refused
    [run_dir] = [d for i in range(2) for d in (tmp_path / f"runs{i}").glob("*")]
    stages = json.loads(RunFolder(run_dir).stages_file.read_text())["stages"]
    assert {stage["status"] for stage in stages} == {"done"}  # never stopped under it
    assert not deployment_containers("demo")
