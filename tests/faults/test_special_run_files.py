"""A run folder holding what is not a plain file: a FIFO in place of one of its records never
makes `repro report` or `repro runs` wait for a writer that never comes, and a resumed run
whose `levels/` is a symlink writes nothing outside its folder."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from repro.runfolder import RunFolder
from tests.support.cli import isolated_env, repro

RECORD = Path(__file__).resolve().parent.parent / "fixtures" / "h200-sglang-0.5.23" / "bench-chat"
DEADLINE_S = 60  # a hang shows as subprocess.TimeoutExpired, not a slow pass


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """A `runs/` folder holding one real bench record (an H200 run's files)."""
    shutil.copytree(RECORD, tmp_path / "runs" / "bench-chat")
    return tmp_path / "runs"


@pytest.mark.parametrize("file", ["summary_file", "server_info_file", "machine_file"])
def test_a_fifo_in_a_run_folder_is_refused_without_waiting(
    runs: Path, tmp_path: Path, file: str
) -> None:
    record = runs / "bench-chat"
    path: Path = getattr(RunFolder(record), file)
    name = path.name
    path.unlink()
    os.mkfifo(path)
    env = isolated_env(tmp_path)
    report = repro("report", str(record), cwd=tmp_path, env=env, timeout=DEADLINE_S)
    assert report.returncode == 1
    assert "Traceback" not in report.stderr
    error = report.stderr.splitlines()[0]
    assert f"{name}: a FIFO, device or socket, not a regular file" in error, report.stderr

    listing = repro("runs", "--json", cwd=tmp_path, env=env, timeout=DEADLINE_S)
    assert listing.returncode == 0, listing.stderr
    assert '"folder": "runs/bench-chat"' in listing.stdout


def test_resuming_a_run_whose_levels_folder_leads_outside_writes_nothing_there(
    runs: Path, tmp_path: Path
) -> None:
    record = runs / "bench-chat"
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    RunFolder(record).levels_dir.symlink_to(outside, target_is_directory=True)
    before = sorted(p.name for p in record.iterdir())
    result = repro(
        "bench", "--resume", str(record), cwd=tmp_path, env=isolated_env(tmp_path),
        timeout=DEADLINE_S,
    )  # fmt: skip
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "levels leads outside the run folder" in result.stderr.splitlines()[0]
    assert list(outside.iterdir()) == []
    assert sorted(p.name for p in record.iterdir()) == before
