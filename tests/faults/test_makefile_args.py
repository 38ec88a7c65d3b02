"""`make recipe|image|push R=...`: a hostile name is refused before any set-up, never run."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

HOSTILE_NAMES = [
    "x;touch {marker};echo",
    "x\ntouch {marker}",
    "$(touch {marker})",
    "`touch {marker}`",
    "$(shell touch {marker})",
    "../recipes/demo",
]


def _make(repo_root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
@pytest.mark.parametrize("target", ["recipe", "image", "push"])
@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_recipe_name_is_refused_and_runs_nothing(
    repo_root: Path, tmp_path: Path, target: str, name: str
) -> None:
    marker = tmp_path / "pwned"
    value = name.format(marker=marker)
    result = _make(repo_root, target, f"R={value}", f"REGISTRY=reg/ns;touch {marker}")
    assert result.returncode == 2
    assert "is not a recipe name" in result.stderr
    assert not marker.exists()


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_a_missing_name_prints_the_usage(repo_root: Path) -> None:
    result = _make(repo_root, "image")
    assert result.returncode == 2
    assert "usage: make" in result.stderr
