"""A `repro image build` killed with SIGKILL leaves its build folder (and, killed while it
checks an image, a temporary `verify-*` tag); the next build removes those whose owner
process is gone, and keeps a running build's."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from repro.image.engine import client
from repro.image.leftovers import WORKDIR_PREFIX, owner_name
from tests.support.cli import REPRO, isolated_env, repro

pytestmark = pytest.mark.docker
DEADLINE_S = 300


@pytest.fixture
def own_spec(repo_root: Path, tmp_path: Path, sim_image: str) -> Iterator[Path]:
    """A copy of the `sim` image spec under a name of this test only (its images removed at
    the end), built from the shared build cache."""
    name = f"killed-{uuid.uuid4().hex[:8]}"
    (tmp_path / "images").mkdir()
    spec = tmp_path / "images" / f"{name}.yaml"
    shutil.copyfile(repo_root / "images" / "sim.yaml", spec)
    yield spec
    for image in client().image.list(f"repro/{name}"):
        for tag in image.repo_tags:
            client().image.remove(tag, force=True)


def _owned_folders(tmp: Path, pid: int) -> list[Path]:
    return list(tmp.glob(f"{WORKDIR_PREFIX}{owner_name(pid)}-*"))


def _tags(repository: str) -> set[str]:
    return {tag for image in client().image.list(repository) for tag in image.repo_tags}


def test_the_next_build_removes_what_a_killed_build_left(
    own_spec: Path, tmp_path: Path, repo_root: Path, sim_image: str
) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**isolated_env(tmp_path), "TMPDIR": str(tmp)}
    killed = subprocess.Popen(
        [REPRO, "image", "build", str(own_spec), "--rebuild"], cwd=repo_root, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + DEADLINE_S
    while not _owned_folders(tmp, killed.pid) and killed.poll() is None:
        assert time.monotonic() < deadline, "the build never made its folder"
        time.sleep(0.05)
    killed.kill()
    killed.wait(30)
    left = _owned_folders(tmp, killed.pid)
    assert left, "the build finished before it was killed; nothing to clean"

    repository = f"repro/{own_spec.stem}"
    dead_tag = f"{repository}:verify-{owner_name(killed.pid)}-0123456789ab"
    live_tag = f"{repository}:verify-{owner_name(os.getpid())}-0123456789ab"
    for tag in (dead_tag, live_tag):
        client().image.tag(sim_image, tag)
    live_folder = tmp / f"{WORKDIR_PREFIX}{owner_name(os.getpid())}-running"
    live_folder.mkdir()

    result = repro("image", "build", str(own_spec), cwd=repo_root, env=env, timeout=DEADLINE_S)
    assert result.returncode == 0, result.stderr
    assert not any(path.exists() for path in left)
    assert dead_tag not in _tags(repository)
    assert live_tag in _tags(repository) and live_folder.is_dir()
