"""Health-gated launches of the simulator image with the real engine and Compose."""

from __future__ import annotations

import json
import socket
import time
import urllib.request

import pytest

from repro.launch import LaunchError, LaunchSpec, launch, status, stop
from repro.launch.deploy import container_of
from repro.launch.from_recipe import launch_spec_for
from repro.lock import load_locked
from tests.support.ports import free_port

pytestmark = pytest.mark.docker


@pytest.fixture
def demo_spec(sim_image: str, state_dir, repo_root, monkeypatch) -> LaunchSpec:
    monkeypatch.chdir(repo_root)
    spec = launch_spec_for(load_locked("demo"), sim_image, host_port=free_port())
    name = f"test-{spec.host_port}"
    yield spec.model_copy(update={"name": name, "health_timeout_s": 60})
    stop(name)  # whatever the test left running (no-op when nothing was launched)


def _with_env(spec: LaunchSpec, **env: str) -> LaunchSpec:
    return spec.model_copy(update={"env": {**spec.env, **env}})


def _no_container_left(spec: LaunchSpec) -> bool:
    return container_of(spec) is None


def test_launch_waits_for_health_then_serves_and_stops_cleanly(demo_spec: LaunchSpec) -> None:
    url = launch(demo_spec)
    request = urllib.request.Request(
        f"{url}/generate",
        data=json.dumps({"text": "Hello", "sampling_params": {"max_new_tokens": 4}}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        body = json.loads(response.read())
    assert body["meta_info"]["completion_tokens"] == 4
    state = status(demo_spec.name)
    assert state["status"] == "running" and state["server_healthy"] is True
    assert stop(demo_spec.name) is True
    assert _no_container_left(demo_spec)


def test_crash_during_start_fails_fast_with_exit_code_and_log(demo_spec: LaunchSpec) -> None:
    crashing = _with_env(demo_spec, REPRO_SIM_FAIL_AT_START="1", REPRO_SIM_LOAD_SECONDS="1")
    with pytest.raises(LaunchError) as caught:
        launch(crashing)
    # the exit, not the health deadline (60 s: "not healthy after"), ended the wait
    assert "exited with code 1" in caught.value.message
    assert "simulated start-up failure" in caught.value.message  # the server's own last words
    assert _no_container_left(crashing)


def test_crash_after_healthy_shows_in_status(demo_spec: LaunchSpec) -> None:
    dying = _with_env(demo_spec, REPRO_SIM_EXIT_AFTER_SECONDS="3")
    launch(dying)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and status(dying.name)["status"] == "running":
        time.sleep(0.5)
    state = status(dying.name)
    assert state["status"] == "exited" and state["exit_code"] not in (None, 0)
    stop(dying.name)
    assert _no_container_left(dying)


def test_port_in_use_is_refused_before_anything_starts(demo_spec: LaunchSpec) -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", demo_spec.host_port))
        blocker.listen()
        with pytest.raises(LaunchError, match="already in use"):
            launch(demo_spec)
    assert _no_container_left(demo_spec)


def test_timeout_stops_the_container(demo_spec: LaunchSpec) -> None:
    slow = _with_env(demo_spec, REPRO_SIM_LOAD_SECONDS="120").model_copy(
        update={"health_timeout_s": 3}
    )
    with pytest.raises(LaunchError, match="not healthy after"):
        launch(slow)
    assert _no_container_left(slow)


def test_missing_image_has_its_own_message(demo_spec: LaunchSpec) -> None:
    missing = demo_spec.model_copy(update={"image": "repro/does-not-exist:0.0.0-000000000000"})
    with pytest.raises(LaunchError, match="not on this machine"):
        launch(missing)
    assert _no_container_left(missing)


def test_missing_model_snapshot_has_its_own_message(demo_spec: LaunchSpec, tmp_path) -> None:
    absent = tmp_path / "hub" / "models--org--model" / "snapshots" / ("a" * 40)
    spec = demo_spec.model_copy(update={"required_snapshots": {"org/model@aaaaaaaaaaaa": absent}})
    with pytest.raises(LaunchError, match="not in the Hub cache") as caught:
        launch(spec)
    assert "repro fetch" in (caught.value.hint or "")
    assert _no_container_left(spec)


def test_dollar_signs_in_recipe_values_reach_the_container_literally(
    demo_spec: LaunchSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", "host-secret-token")  # what an expanded ${HF_TOKEN} would leak
    literal_env = {"BAZ": "${HF_TOKEN}", "QUX": "${NOPE:?boom}", "PRICE": "$5 $$"}
    name_arg = "${USER}x$HOSTNAME"
    spec = _with_env(demo_spec, **literal_env).model_copy(
        update={"argv": [*demo_spec.argv, "--served-model-name", name_arg]}
    )
    url = launch(spec)
    container = container_of(spec)
    assert container is not None
    for key, value in literal_env.items():
        assert container.execute(["printenv", key]).strip() == value
    with urllib.request.urlopen(f"{url}/model_info", timeout=10) as response:
        assert json.loads(response.read())["served_model_name"] == name_arg
    with urllib.request.urlopen(f"{url}/server_info", timeout=10) as response:
        assert "host-secret-token" not in response.read().decode()
