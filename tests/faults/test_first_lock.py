"""A first lock records only what the build produces: an image changed in place under its
content tag (labels kept, as `docker commit` keeps them) is refused before any lock records
it, and the check leaves no image or container behind.

Each test builds demo's simulator image under an image spec name of its own (from the shared
build cache: seconds), so tampering with it touches no image another test runs.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from repro.image.engine import client
from tests.support.cli import isolated_env, repro

pytestmark = pytest.mark.docker


@pytest.fixture
def own_image(repo_root: Path, tmp_path: Path, sim_image: str) -> Iterator[tuple[Path, str]]:
    """A copy of demo whose image spec (a copy of `sim`) has a name of this test only; yields
    the recipe file and the image's repository. Everything under it is removed at the end."""
    name = f"trust-{uuid.uuid4().hex[:8]}"
    (tmp_path / "images").mkdir()
    shutil.copyfile(repo_root / "images" / "sim.yaml", tmp_path / "images" / f"{name}.yaml")
    (tmp_path / "recipes").mkdir()
    recipe = tmp_path / "recipes" / "demo.yaml"
    text = (repo_root / "recipes" / "demo.yaml").read_text()
    recipe.write_text(text.replace("\nimage: sim\n", f"\nimage: {name}\n"))
    repository = f"repro/{name}"
    yield recipe, repository
    for image in _images_of(repository):
        client().image.remove(image, force=True)


def _images_of(repository: str) -> list[str]:
    return [tag for image in client().image.list(repository) for tag in image.repo_tags]


def _tamper_in_place(tag: str, tmp_path: Path) -> None:
    """One changed file, committed back under the same tag: a container created (never
    started) from the image keeps its whole config, labels included, in the commit."""
    evil = tmp_path / "motd"
    evil.write_text("evil\n")
    container = client().container.create(tag)
    try:
        client().container.copy(evil, (container, "/etc/motd"))
        before = client().image.inspect(tag).config
        client().container.commit(container, tag)
    finally:
        client().container.remove(container, force=True)
    after = client().image.inspect(tag).config
    assert (after.labels, after.cmd, after.env) == (before.labels, before.cmd, before.env)


def _containers_of(tag: str) -> list[str]:
    return [c.name for c in client().container.list(all=True, filters=[("ancestor", tag)])]


def _built_tag(recipe: Path, env: dict[str, str], repo_root: Path) -> str:
    """The image built, unlocked (nothing recorded), as a user may have done days ago."""
    built = repro("image", "build", str(recipe), "--json", cwd=repo_root, env=env)
    assert built.returncode == 0, built.stderr
    return str(json.loads(built.stdout)["tag"])


def test_a_first_lock_refuses_an_image_changed_in_place(
    own_image: tuple[Path, str], repo_root: Path, tmp_path: Path
) -> None:
    recipe, repository = own_image
    env = isolated_env(tmp_path)
    tag = _built_tag(recipe, env, repo_root)
    _tamper_in_place(tag, tmp_path)
    tampered = client().image.inspect(tag).id

    assert repro("lock", str(recipe), cwd=repo_root, env=env).returncode == 0
    lock = Path(env["REPRO_LOCKS_DIR"]) / "demo.lock.json"
    before = lock.read_bytes()
    runs = tmp_path / "runs"
    calls = {
        "image build": ("image", "build", str(recipe)),
        "run": ("run", str(recipe), "--runs-dir", str(runs)),
    }
    for name, args in calls.items():
        result = repro(*args, cwd=repo_root, env=env)
        assert result.returncode != 0, f"{name} recorded a changed image"
        assert f"the local image {tag} is not what its build produces: 1 of its" in result.stderr
        assert "Cmd" not in result.stderr, name  # only the layer differs
        assert "--rebuild" in result.stderr and "Traceback" not in result.stderr, name
        assert lock.read_bytes() == before, f"{name} wrote the lock"
    assert json.loads(lock.read_text())["image"] is None
    # Nothing left behind: the check's own build is gone, the tag still holds what it held.
    assert _images_of(repository) == [tag]
    assert client().image.inspect(tag).id == tampered
    assert not _containers_of(tag)

    rebuilt = repro("image", "build", str(recipe), "--rebuild", cwd=repo_root, env=env)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert json.loads(lock.read_text())["image"]["reference"] == tag
    assert repro("image", "verify", str(recipe), cwd=repo_root, env=env).returncode == 0


def test_a_first_lock_records_an_untouched_image(
    own_image: tuple[Path, str], repo_root: Path, tmp_path: Path
) -> None:
    recipe, repository = own_image
    env = isolated_env(tmp_path)
    tag = _built_tag(recipe, env, repo_root)
    found = client().image.inspect(tag).id
    assert repro("lock", str(recipe), cwd=repo_root, env=env).returncode == 0
    built = repro("image", "build", str(recipe), "--json", cwd=repo_root, env=env)
    assert built.returncode == 0, built.stderr
    image = json.loads((Path(env["REPRO_LOCKS_DIR"]) / "demo.lock.json").read_text())["image"]
    assert image["reference"] == tag and image["image_id"] == found  # the one found, kept
    assert _images_of(repository) == [tag] and not _containers_of(tag)
    assert repro("image", "verify", str(recipe), cwd=repo_root, env=env).returncode == 0
