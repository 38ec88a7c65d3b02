"""A real registry on 127.0.0.1 for the image tests that push and pull."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from repro.image.engine import client
from tests.support.registry import Registry, running_registry


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Registry]:
    # A private Docker client config: the login stays in this test's credential store.
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker-config"))
    with running_registry(tmp_path) as running:
        yield running
    for image in client().image.list():
        for tag in image.repo_tags:
            if tag.startswith(running.host):
                client().image.remove(tag)
