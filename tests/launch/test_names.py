"""Deployments of two checkouts on one machine: their own Compose project, their own port."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from repro.launch.deploy import host_port_for
from repro.launch.from_recipe import launch_spec_for
from repro.lock import load_locked


def test_each_state_dir_has_its_own_compose_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repo_root: Path
) -> None:
    locked = load_locked(str(repo_root / "recipes" / "demo.yaml"))
    projects = set()
    for clone in ("one", "two"):
        monkeypatch.setenv("REPRO_STATE_DIR", str(tmp_path / clone / ".repro"))
        spec = launch_spec_for(locked, "repro/sim:test")
        assert spec.name == "demo" and spec.project.startswith("repro-demo-")
        projects.add(spec.project)
    assert len(projects) == 2


def test_a_taken_port_gives_another_free_one() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        other = host_port_for(port)
        assert other != port
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", other))  # it is free
