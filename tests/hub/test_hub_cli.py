"""`repro fetch` end to end: the real CLI in a subprocess against the local Hub server."""

from __future__ import annotations

import os
from pathlib import Path

from hubserver.fixtures import MODEL_WEIGHTS, Project
from repro.exitcodes import ExitCode


def test_fetch_downloads_then_works_offline(project: Project) -> None:
    project.lock()
    fetched = project.repro("fetch", "small")
    assert fetched.returncode == 0, fetched.stderr
    assert "to download into" in fetched.stderr  # the plan, before any byte
    assert "Fetching 8 files" in fetched.stderr  # huggingface_hub's progress bars
    assert "Fetched into" in fetched.stdout and "org/drafter" in fetched.stdout
    snapshot = project.cache / "models--org--model" / "snapshots" / project.model.refs["main"]
    weights = snapshot / "model-00001-of-00001.safetensors"
    assert weights.stat().st_size == MODEL_WEIGHTS
    assert not (snapshot / "README.md").exists() and not (snapshot / "pytorch_model.bin").exists()
    assert (snapshot / "chat_template.jinja").exists()

    project.hub.stop()  # nothing to talk to: the cache alone must do
    offline = project.repro("fetch", "small", HF_HUB_OFFLINE="1")
    assert offline.returncode == 0, offline.stderr
    assert "offline (HF_HUB_OFFLINE)" in offline.stdout
    assert "all 8 files already in the cache" in offline.stderr


def test_fetch_refuses_when_the_disk_is_too_small(project: Project, tmpfs: Path) -> None:
    project.lock()
    refused = project.repro("fetch", "small", "--cache-dir", str(tmpfs / "hub"))
    assert refused.returncode == ExitCode.NO_SPACE, refused.stdout + refused.stderr
    message = " ".join(refused.stderr.split())
    assert "not enough disk space for org/model@" in message
    assert f"free at {tmpfs / 'hub'} (filesystem of {tmpfs})" in message
    assert "HF_HUB_CACHE" in message and "--cache-dir" in message
    assert "Traceback" not in refused.stderr
    assert os.listdir(tmpfs) == []  # not a byte written
    assert project.hub.downloads() == []
