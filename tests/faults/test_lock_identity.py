"""A lock is the one its recipe file wrote, read as written: a JSON lock or recipe that names a
key twice is refused (which value counts would be a guess), a huge (sparse) lock is refused
before it is read, and a recipe file that declares another recipe's `name` cannot overwrite
that recipe's lock."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.cli import isolated_env, repro


@pytest.fixture
def project(tmp_path: Path, repo_root: Path) -> Path:
    """A project folder with demo's recipe and image spec, its locks under `locks/`."""
    shutil.copytree(repo_root / "images", tmp_path / "images")
    (tmp_path / "recipes").mkdir()
    shutil.copyfile(repo_root / "recipes" / "demo.yaml", tmp_path / "recipes" / "demo.yaml")
    return tmp_path


def _error(result_stderr: str) -> str:
    assert "Traceback" not in result_stderr, result_stderr
    [line] = [line for line in result_stderr.splitlines() if line.startswith("error:")]
    return line


def _locked_demo(project: Path) -> Path:
    env = isolated_env(project)
    result = repro("lock", "demo", cwd=project, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return project / "locks" / "demo.lock.json"


def test_a_lock_with_a_key_given_twice_is_refused(project: Path) -> None:
    lock = _locked_demo(project)
    text = lock.read_text()
    # the same key again, later in the top-level object: json.loads would keep this one
    lock.write_text(text.replace('\n  "lock_version"', '\n  "recipe": {},\n  "lock_version"', 1))
    assert text != lock.read_text()
    for command in (["image", "verify"], ["launch", "--dry-run"]):
        result = repro(*command, str(lock), cwd=project, env=isolated_env(project))
        assert result.returncode == 1
        assert '"recipe" appears twice' in _error(result.stderr)


def test_a_sparse_three_gigabyte_lock_is_refused_unread(project: Path) -> None:
    lock = project / "big.lock.json"
    with open(lock, "wb") as handle:
        handle.truncate(3 * 1024**3)  # sparse: no disk used, but 3 GB to read
    result = repro("launch", "--dry-run", str(lock), cwd=project, env=isolated_env(project))
    assert result.returncode == 1
    assert "big.lock.json: larger than" in _error(result.stderr)


def test_a_recipe_cannot_take_another_recipes_name(project: Path) -> None:
    lock = _locked_demo(project)
    before = lock.read_bytes()
    text = (project / "recipes" / "demo.yaml").read_text()
    impostor = project / "recipes" / "other.yaml"
    impostor.write_text("name: demo\n" + text.replace("requests: 64", "requests: 8"))
    result = repro("lock", str(impostor), cwd=project, env=isolated_env(project))
    assert result.returncode == 1
    assert "other.yaml: name: 'demo' is the name of recipes/demo.yaml" in _error(result.stderr)
    assert lock.read_bytes() == before


def test_a_lock_is_keyed_by_its_recipe_file(project: Path) -> None:
    text = (project / "recipes" / "demo.yaml").read_text()
    (project / "recipes" / "renamed.yaml").write_text("name: solo\n" + text)
    result = repro("lock", "recipes/renamed.yaml", cwd=project, env=isolated_env(project))
    assert result.returncode == 0, result.stderr
    assert (project / "locks" / "renamed.lock.json").is_file()
    assert not (project / "locks" / "solo.lock.json").exists()
