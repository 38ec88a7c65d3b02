"""`repro lock` end to end: the real CLI in a subprocess against the local Hub server."""

from __future__ import annotations

import json

from hubserver.fixtures import DRAFTER_WEIGHTS, MODEL_WEIGHTS, Project
from hubserver.repos import random_bytes

MODEL_SELECTED = [
    "chat_template.jinja",
    "config.json",
    "generation_config.json",
    "model-00001-of-00001.safetensors",
    "model.safetensors.index.json",
    "modeling_deepseek.py",
    "tiktoken.model",
    "tokenizer_config.json",
]


def test_lock_relock_and_check_drift(project: Project) -> None:
    # lock: SHAs pinned, files selected, totals, canonical JSON
    result = project.repro("lock", "small")
    assert result.returncode == 0, result.stderr
    assert "wrote" in result.stdout and "org/model" in result.stdout
    path = project.lock_path()
    text = path.read_text()
    data = json.loads(text)
    assert text == json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert data["lock_version"] == 1 and data["repro_version"]
    old_sha = project.model.refs["main"]
    assert data["model"]["sha"] == old_sha and data["model"]["revision"] == "main"
    assert [f["path"] for f in data["model"]["files"]] == MODEL_SELECTED
    served = project.model.commits[old_sha]["model-00001-of-00001.safetensors"]
    weights = next(f for f in data["model"]["files"] if f["path"] == served.path)
    assert weights == {"path": served.path, "size": MODEL_WEIGHTS, "sha256": served.sha256}
    assert data["model"]["total_bytes"] == sum(f["size"] for f in data["model"]["files"])
    assert data["drafter"]["sha"] == project.drafter.refs["main"]
    assert [f["path"] for f in data["drafter"]["files"]] == ["config.json", "model.safetensors"]
    assert data["drafter"]["total_bytes"] == DRAFTER_WEIGHTS + len(b'{"block_size": 8}')
    assert data["recipe"]["name"] == "small" and data["image"] is None

    # re-lock an unchanged recipe (in-process: the same function): byte-identical, not rewritten
    before, mtime = path.read_bytes(), path.stat().st_mtime_ns
    assert not project.lock().written
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime

    # the branch moves: --check lists the drift, exits 1 and writes nothing
    new_sha = project.model.update(
        put={
            "model-00002-of-00002.safetensors": random_bytes(1000, "new"),
            "config.json": b'{"model_type": "deepseek_v3", "num_hidden_layers": 61}',
        },
        delete=["generation_config.json"],
    )
    drift = project.repro("lock", "small", "--check")
    assert drift.returncode == 1, drift.stdout + drift.stderr
    assert f"'main' moved from {old_sha[:12]} to {new_sha[:12]}" in drift.stdout
    assert "file added: model-00002-of-00002.safetensors" in drift.stdout
    assert "file removed: generation_config.json" in drift.stdout
    assert "config.json changed size" in drift.stdout
    assert path.read_bytes() == before


def test_a_corrupt_lock_says_how_to_recover(project: Project) -> None:
    assert project.repro("lock", "small").returncode == 0
    path = project.lock_path()
    path.write_text('{"model": ')  # truncated
    refused = project.repro("lock", "small")
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert f"mv {path} {path}.bad" in refused.stderr
    path.rename(f"{path}.bad")  # what the hint says
    assert project.repro("lock", "small").returncode == 0


def test_fetch_dry_run_refuses_a_commit_that_does_not_exist(project: Project) -> None:
    assert project.repro("lock", "small").returncode == 0
    path = project.lock_path()
    data = json.loads(path.read_text())
    data["model"]["sha"] = "0" * 40
    path.write_text(json.dumps(data))
    dry_run = project.repro("fetch", "small", "--dry-run")
    assert dry_run.returncode != 0 and "Traceback" not in dry_run.stderr
    assert "0" * 12 in dry_run.stderr or "not found" in dry_run.stderr.lower(), dry_run.stderr
