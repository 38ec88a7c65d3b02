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


@pytest.mark.parametrize(
    "campaign",
    [
        "points: [{recipe: SHADOW}]\n",  # an absolute path the campaign file names
        "base: ../shadow.yaml\n",  # a path that climbs out of the project
        "points: [{recipe: recipes/evil.yaml}]\n",  # a link in the project to outside it
    ],
    ids=["absolute", "climbs-out", "link"],
)
def test_a_campaign_reads_no_recipe_outside_the_project(project: Path, campaign: str) -> None:
    shadow = project.parent / "shadow.yaml"
    shadow.write_text(SECRET)
    (project / "recipes" / "evil.yaml").symlink_to(shadow)
    (project / "campaigns").mkdir()
    path = project / "campaigns" / "c.yaml"
    path.write_text("machine: m\n" + campaign.replace("SHADOW", str(shadow)))
    error = _refused(project, "campaign", "plan", "--no-predict", "campaigns/c.yaml")
    assert "this recipe file leads outside the project" in error, error


@pytest.mark.parametrize(
    "command",
    [["recipe", "check"], ["image", "bump", "--tag", "x"]],
    ids=["recipe", "image-spec"],
)
def test_a_named_file_that_is_no_recipe_is_described_not_quoted(
    project: Path, command: list[str]
) -> None:
    """A file the user names is read, but an error never prints its lines (as keys)."""
    (project.parent / "notes.yaml").write_text(
        "api key SECRETHASH: 1\n"
        "SECRETHASH_password: 2\n"
    )  # fmt: skip
    error = _refused(project, *command, str(project.parent / "notes.yaml"))
    assert "none of its 2 top-level keys is a field of one" in error, error


def test_a_key_that_is_no_name_is_described_not_quoted(project: Path) -> None:
    (project / "recipes" / "keys.yaml").write_text(
        "extends: demo\nserver: {'SECRETHASH line: x': 1}\n"
    )
    error = _refused(project, "recipe", "check", "keys")
    assert "server.<key>: an unknown key of 18 characters that is not a field name" in error


def test_a_prompt_file_that_links_out_is_refused(project: Path) -> None:
    (project.parent / "shadow.csv").write_text(SECRET)
    (project / "prompts.csv").symlink_to(project.parent / "shadow.csv")
    shutil.copyfile(project.parent / "shadow.csv", project / "copied.csv")
    url = "http://127.0.0.1:9"
    error = _refused(project, "accept", "demo", "--prompt-sets", "prompts.csv", "--url", url)
    assert "prompts.csv: a link to a file outside the project" in error, error
    # Read when the file itself is named, and its first row (the header) is not quoted.
    error = _refused(project, "accept", "demo", "--prompt-sets", "copied.csv", "--url", url)
    assert "no prompt column; its columns are: 1 that are not names" in error, error
