"""A lock runs only the image it records: a tampered or swapped local image is refused by
`run`, `launch` and `image build` from that lock, and the lock file is left byte for byte."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from repro.image.engine import client
from tests.support.cli import isolated_env, repro
from tests.support.deployments import deployment_containers
from tests.support.ports import free_port

pytestmark = pytest.mark.docker


@pytest.fixture
def own_tag(sim_image: str) -> Iterator[str]:
    """A copy of the simulator image under a tag of this test only: tampering with it
    touches no image another test runs."""
    tag = f"repro-test/trust-{uuid.uuid4().hex[:8]}:1"
    client().image.tag(sim_image, tag)
    yield tag
    client().image.remove(tag, force=True)


def _locked_on(tag: str, repo_root: Path, env: dict[str, str]) -> Path:
    """demo's lock, its image built, then recorded under `tag` (same content)."""
    assert repro("lock", "demo", cwd=repo_root, env=env).returncode == 0
    built = repro("image", "build", "demo", cwd=repo_root, env=env)
    assert built.returncode == 0, built.stderr
    path = Path(env["REPRO_LOCKS_DIR"]) / "demo.lock.json"
    data = json.loads(path.read_text())
    data["image"]["reference"] = tag
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def _tamper(tag: str, tmp_path: Path) -> None:
    """One changed file inside the image, committed back under the same tag."""
    (tmp_path / "Dockerfile").write_text(f"FROM {tag}\nRUN echo evil >> /etc/motd\n")
    client().build(tmp_path, tags=[tag], load=True, progress=False)


def _swap(tag: str, tmp_path: Path) -> None:
    """Another image (its parent, without the layers on top) retagged to the pinned name."""
    parent = client().image.inspect(tag).config.labels["org.opencontainers.image.base.name"]
    client().image.tag(parent, tag)


@pytest.mark.parametrize("change", [_tamper, _swap], ids=["tampered", "swapped"])
def test_a_changed_image_is_refused_and_the_lock_is_unchanged(
    change, own_tag: str, repo_root: Path, tmp_path: Path
) -> None:
    env = isolated_env(tmp_path)
    lock = _locked_on(own_tag, repo_root, env)
    assert repro("image", "verify", str(lock), cwd=repo_root, env=env).returncode == 0
    before = lock.read_bytes()
    change(own_tag, tmp_path)

    calls = {
        "run": ("run", str(lock), "--runs-dir", str(tmp_path / "runs"), "--port", str(free_port())),
        "launch": ("launch", str(lock), "--port", str(free_port())),
        "image build": ("image", "build", str(lock)),
    }
    for name, args in calls.items():
        result = repro(*args, cwd=repo_root, env=env)
        assert result.returncode != 0, f"{name} ran a changed image"
        assert "is not the one" in result.stderr and "--relock-image" in result.stderr, name
        assert "Traceback" not in result.stderr, name
        assert lock.read_bytes() == before, f"{name} rewrote the lock"
    assert repro("image", "verify", str(lock), cwd=repo_root, env=env).returncode != 0
    assert not deployment_containers("demo", tmp_path / "state")


def test_relock_image_records_a_new_image_on_purpose(
    own_tag: str, repo_root: Path, tmp_path: Path
) -> None:
    env = isolated_env(tmp_path)
    lock = _locked_on(own_tag, repo_root, env)
    _tamper(own_tag, tmp_path)
    relocked = repro("image", "build", str(lock), "--relock-image", cwd=repo_root, env=env)
    assert relocked.returncode == 0, relocked.stderr
    assert repro("image", "verify", str(lock), cwd=repo_root, env=env).returncode == 0
