"""`repro launch` / `repro status` / `repro stop` as a user runs them, Ctrl-C included."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import yaml

from repro.launch.spec import project_name
from repro.runfolder import RunFolder
from tests.support.cli import REPRO, repro
from tests.support.deployments import deployment_containers
from tests.support.ports import free_port

pytestmark = pytest.mark.docker


@pytest.fixture
def env(tmp_path: Path, repo_root: Path) -> dict[str, str]:
    return {
        **os.environ,
        "REPRO_STATE_DIR": str(tmp_path / "state"),
        "REPRO_IMAGES_DIR": str(repo_root / "images"),
    }


def test_launch_status_stop(
    sim_image: str, repo_root: Path, env: dict[str, str], tmp_path: Path
) -> None:
    port = str(free_port())
    launched = repro("launch", "demo", "--port", port, cwd=repo_root, env=env)
    try:
        assert launched.returncode == 0, launched.stderr
        assert launched.stdout.strip() == f"http://127.0.0.1:{port}"
        status = json.loads(repro("status", "demo", "--json", cwd=repo_root, env=env).stdout)
        assert status[0]["status"] == "running" and status[0]["server_healthy"] is True
        logs = repro("logs", "demo", cwd=repo_root, env=env)
        assert "fired up and ready to roll" in logs.stdout
        # A standalone bench of what launch started records the image the container runs.
        record = tmp_path / "benched"
        benched = repro("bench", "--url", f"http://localhost:{port}", "--concurrency", "1",
                         "--prompts", "2", "--input-len", "8", "--output-len", "4",
                         "--output", str(record), cwd=repo_root, env=env)  # fmt: skip
        assert benched.returncode == 0, benched.stderr
        info = json.loads(RunFolder(record).server_info_file.read_text())
        assert info["deployment"] == "demo" and info["image_reference"] == status[0]["image"]
        assert info["image_id"].startswith("sha256:")
        compared = repro("compare", str(record), str(record), "--json", cwd=repo_root, env=env)
        rows = {row["field"]: row["a"] for row in json.loads(compared.stdout)["machines"]}
        assert rows["image reference"] == status[0]["image"]
    finally:  # stop takes what launch took: here the recipe file
        stopped = repro("stop", str(repo_root / "recipes" / "demo.yaml"), cwd=repo_root, env=env)
        assert stopped.returncode == 0, stopped.stderr
    assert not deployment_containers("demo", tmp_path / "state")


def test_dry_run_starts_nothing(repo_root: Path, env: dict[str, str], tmp_path: Path) -> None:
    result = repro("launch", "demo", "--dry-run", cwd=repo_root, env=env)
    assert result.returncode == 0, result.stderr
    override = yaml.safe_load(result.stdout.split("\ndocker compose")[0])
    command = override["services"]["sglang"]["command"]
    assert isinstance(command, list) and "--speculative-algorithm" in command
    assert f"docker compose -p {project_name('demo', tmp_path / 'state')} " in result.stdout
    assert not deployment_containers("demo", tmp_path / "state")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_during_the_wait_stops_what_was_started(
    sig: signal.Signals, sim_image: str, repo_root: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    """Ctrl-C or SIGTERM while launch waits for a server that is not healthy yet: the
    container it started is stopped, the exit code is 128 + the signal, no traceback."""
    slow = json.loads(repro("recipe", "show", "demo", "--json", cwd=repo_root, env=env).stdout)
    slow.update(name=f"slow-{uuid.uuid4().hex[:8]}", extends=None)
    slow["simulator"]["load_seconds"] = 300  # healthy long after the test ends
    recipe = tmp_path / f"{slow['name']}.yaml"
    recipe.write_text(yaml.safe_dump(slow))
    process = subprocess.Popen(
        [REPRO, "launch", str(recipe), "--port", str(free_port())],
        cwd=repo_root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    state = tmp_path / "state"
    try:
        deadline = time.monotonic() + 60
        while not any(c.state.running for c in deployment_containers(slow["name"], state)):
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.2)
        process.send_signal(sig)
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
        for container in deployment_containers(slow["name"], state):
            container.remove(force=True)  # only when the test failed: never another's
    assert process.returncode == 128 + sig, stderr[-2000:]
    assert f"interrupted by {sig.name}" in stderr and "Traceback" not in stderr
    assert not deployment_containers(slow["name"], state)


def test_two_checkouts_each_run_their_own_demo(
    sim_image: str, repo_root: Path, tmp_path: Path
) -> None:
    """Two state directories (two clones) on one engine: the same deployment name twice,
    each stopped by its own checkout only."""
    states = [tmp_path / "one", tmp_path / "two"]
    envs = [{**os.environ, "REPRO_STATE_DIR": str(state)} for state in states]
    try:
        for env in envs:
            launched = repro("launch", "demo", "--port", str(free_port()), cwd=repo_root, env=env)
            assert launched.returncode == 0, launched.stderr
        assert all(deployment_containers("demo", state) for state in states)
        assert repro("stop", "demo", cwd=repo_root, env=envs[0]).returncode == 0
        assert not deployment_containers("demo", states[0])
        status = json.loads(repro("status", "demo", "--json", cwd=repo_root, env=envs[1]).stdout)
        assert status[0]["status"] == "running"
    finally:
        for env in envs:
            repro("stop", "demo", cwd=repo_root, env=env)
    assert not any(deployment_containers("demo", state) for state in states)
