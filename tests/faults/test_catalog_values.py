"""A catalog is data from an image or a hand-edited lock: its values are checked by type and
to one line before anything prints them, and the file an image writes is read as itself,
never through a link it left in its place."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repro import fileread
from repro.cli import main
from tests.export.conftest import Project


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda c: c.update(sglang_version={"a": 1}), "sglang_version is a dict, expected text"),
        (lambda c: c.update(sglang_version="0.5.23\nPASS all"), "sglang_version is not one line"),
        (lambda c: c["flags"][0].update(options=["--x\nFAKE"]), "options is not one line"),
        (lambda c: c["flags"][0].update(choices=[{"a": 1}]), "choices: a dict, expected text"),
        (lambda c: c.update(env="SGLANG_X"), "env is a str, expected a list"),
    ],
    ids=["mapping", "newline", "option", "choice", "env"],
)
def test_a_lock_whose_catalog_values_are_not_text_is_refused(
    project: Project, edit: Any, problem: str
) -> None:
    path = project.lock("kimi26-tp8")
    lock = json.loads(path.read_text())
    edit(lock["catalog"])
    path.write_text(json.dumps(lock))
    result = CliRunner().invoke(main, ["recipe", "check", str(path)])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and "PASS all" not in result.output
    assert "FAKE\n" not in result.output
    [line] = [line for line in result.output.splitlines() if "not an SGLang option catalog" in line]
    assert problem in line, result.output


def test_a_file_an_image_wrote_is_read_without_following_links(tmp_path: Path) -> None:
    (tmp_path / "host-secret").write_text('{"SECRETHASH": 1}')
    written = tmp_path / "catalog.json"
    written.symlink_to(tmp_path / "host-secret")
    with pytest.raises(fileread.UnreadableFile, match=r"catalog\.json: a link, not a regular file"):
        fileread.read_json(written, "catalog.json", follow_links=False)
    written.unlink()
    written.write_text("Traceback (most recent call last):\n")
    with pytest.raises(fileread.UnreadableFile, match=r"catalog\.json: corrupt JSON at line 1"):
        fileread.read_json(written, "catalog.json", follow_links=False)
