"""A recipe reads only files of the project (or one the user names on the command line): an
`extends:` that climbs out, or a link in `recipes/` or `images/` to a file elsewhere, is
refused before the file is read, so none of its lines reach an error message."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.cli import isolated_env, repro

SECRET = "root:$6$SECRETHASH:19000:0:99999:7:::\n"


@pytest.fixture
def project(tmp_path: Path, repo_root: Path) -> Path:
    """A project folder (recipes/, images/) beside a secret file outside it."""
    root = tmp_path / "project"
    shutil.copytree(repo_root / "images", root / "images")
    (root / "recipes").mkdir()
    shutil.copyfile(repo_root / "recipes" / "demo.yaml", root / "recipes" / "demo.yaml")
    (tmp_path / "shadow").write_text(SECRET)
    return root


def _refused(project: Path, *args: str) -> str:
    """What `repro ARGS` printed, refused (exit 1) with no line of the secret file."""
    result = repro(*args, cwd=project, env=isolated_env(project.parent))
    assert result.returncode == 1, result.stdout
    assert "Traceback" not in result.stderr
    assert "SECRETHASH" not in result.stdout + result.stderr
    return result.stdout + result.stderr


@pytest.mark.parametrize("parent", ["../../shadow", "../../shadow.yaml"])
def test_extends_cannot_climb_out_of_the_project(project: Path, parent: str) -> None:
    if parent.endswith(".yaml"):
        (project.parent / "shadow.yaml").write_text(SECRET)
    (project / "recipes" / "child.yaml").write_text(f"extends: {parent}\n")
    error = _refused(project, "recipe", "show", "child")
    assert "leads outside the project" in error, error


def test_a_link_in_recipes_to_a_file_elsewhere_is_refused(project: Path) -> None:
    (project / "recipes" / "evil.yaml").symlink_to(project.parent / "shadow")
    assert "evil.yaml: this recipe file leads outside the project" in _refused(
        project, "recipe", "show", "evil"
    )
    listing = repro("recipe", "list", "--json", cwd=project, env=isolated_env(project.parent))
    assert "SECRETHASH" not in listing.stdout + listing.stderr
    assert "leads outside the project" in listing.stdout


def test_a_link_in_images_to_a_file_elsewhere_is_refused(project: Path) -> None:
    (project / "images" / "sim.yaml").unlink()
    (project / "images" / "sim.yaml").symlink_to(project.parent / "shadow")
    assert "images/sim.yaml: this image spec file leads outside the project" in _refused(
        project, "recipe", "check", "demo"
    )


def test_a_file_named_on_the_command_line_is_read(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "mine" / "recipes"
    elsewhere.mkdir(parents=True)
    shutil.copyfile(project / "recipes" / "demo.yaml", elsewhere / "mine.yaml")
    (elsewhere / "child.yaml").write_text("extends: mine\n")
    result = repro("recipe", "show", str(elsewhere / "child.yaml"), cwd=project)
    assert result.returncode == 0, result.stderr
