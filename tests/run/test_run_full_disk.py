"""A disk that fills up during `repro run`'s bench: one clear line, the server stopped, the
run record still valid JSON, no temp file left (a small tmpfs stands in for the full disk)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest

from repro.runfolder import RunFolder
from tests.support.cli import REPRO, isolated_env
from tests.support.deployments import deployment_containers
from tests.support.ports import free_port

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root"),
]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def _fill(disk: Path) -> None:
    """Write until the disk is full (unbuffered: every byte that fits lands)."""
    with suppress(OSError), (disk / "filler").open("wb", buffering=0) as filler:
        while True:
            filler.write(b"\0" * 4096)


def test_full_disk_during_bench(repo_root: Path, tmp_path: Path, small_disk: Path) -> None:
    runs = small_disk / "runs"
    process = subprocess.Popen(
        [REPRO, "run", "demo", "--runs-dir", str(runs), "--port", str(free_port())],
        cwd=repo_root,
        env=isolated_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 300
    while not any(RunFolder(run).bench.has_run() for run in runs.glob("*")):
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    _fill(small_disk)
    _, stderr = process.communicate(timeout=300)

    assert process.returncode == 16, stderr[-2000:]  # the bench stage's code
    assert "No space left on device" in stderr and "Traceback" not in stderr
    assert not deployment_containers("demo", tmp_path / "state")
    [run_dir] = runs.iterdir()
    assert json.loads(RunFolder(run_dir).bench.run_file.read_text())["recipe_name"] == "demo"
    assert not list(small_disk.rglob("*.tmp"))
