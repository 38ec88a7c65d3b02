"""A run folder's name (bench, accept and `repro run` all take it from `fresh_run_dir`)."""

from __future__ import annotations

from pathlib import Path

from repro.runfolder import fresh_run_dir, new_run_dir


def test_a_name_unsafe_for_a_folder_is_made_safe(tmp_path: Path) -> None:
    run_dir = fresh_run_dir(tmp_path, "../kimi 2.6/ep4")
    assert run_dir.parent == tmp_path
    assert run_dir.name.endswith("-..-kimi-2.6-ep4") and "/" not in run_dir.name


def test_runs_started_in_the_same_second_get_their_own_folders(tmp_path: Path) -> None:
    made = [new_run_dir("demo", None, tmp_path) for _ in range(3)]
    assert len(set(made)) == 3 and all(d.is_dir() for d in made)
    planned = fresh_run_dir(tmp_path, "demo")  # what `repro run` would name next
    assert planned not in made and not planned.exists()
