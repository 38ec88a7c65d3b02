"""`repro launch RECIPE --sim`: the recipe's own server on the simulator, as the deployment
`<recipe>-sim`, e.g. two drafters side by side for an A/B without two hand-started servers."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from tests.support.cli import isolated_env, repro
from tests.support.deployments import deployment_containers
from tests.support.ports import free_port


def test_time_scale_without_sim_is_refused() -> None:
    result = CliRunner().invoke(main, ["launch", "demo", "--time-scale", "0.5"])
    assert result.exit_code == 2 and "--time-scale acts only with --sim" in result.output


@pytest.mark.docker
def test_launch_sim_serves_the_recipe_on_its_profile(repo_root: Path, tmp_path: Path) -> None:
    env = isolated_env(tmp_path)
    port = free_port()
    args = ["--sim", "--time-scale", "0", "--port", str(port)]
    launched = repro("launch", "kimi26-ep4-dflash", *args, cwd=repo_root, env=env)
    try:
        assert launched.returncode == 0, launched.stderr[-3000:]
        assert launched.stdout.strip() == f"http://127.0.0.1:{port}"
        url = f"http://127.0.0.1:{port}/server_info"
        with urllib.request.urlopen(url, timeout=10) as response:
            info = json.loads(response.read())
        assert info["sim_profile"] == "kimi26-ep4-rtx6000" and info["sim_time_scale"] == 0
        assert info["speculative_draft_model_path"] == "z-lab/Kimi-K2.6-DFlash"
        assert deployment_containers("kimi26-ep4-dflash-sim", tmp_path / "state")
    finally:
        stopped = repro("stop", "kimi26-ep4-dflash-sim", cwd=repo_root, env=env)
    assert stopped.returncode == 0, stopped.stderr
    assert not deployment_containers("kimi26-ep4-dflash-sim", tmp_path / "state")
