"""A model published into the Hub cache is locked and fetched with the Hub offline exactly as
the same files served by a Hub are: same selected files, sizes and LFS sha256."""

from __future__ import annotations

import json
from pathlib import Path

from hubserver.fixtures import Project, model_files
from repro.hub.publish import publish_folder, publish_to_cache


def _files() -> dict[str, bytes]:
    return {f.path: f.data for f in model_files()}


def test_a_published_model_locks_and_fetches_offline_like_a_hub_one(project: Project) -> None:
    (project.root / "recipes" / "local.yaml").write_text(
        (project.root / "recipes" / "small.yaml")
        .read_text()
        .replace("org/model", "org/published")
        .replace("drafter: {repo: org/drafter, revision: main}\n", "drafter: null\n")
        .replace("speculative: {algorithm: DFLASH}\n", "speculative: null\n")
    )
    commit = publish_to_cache("org/published", _files(), project.cache)
    assert publish_to_cache("org/published", _files(), project.cache) == commit  # idempotent

    locked = project.repro("lock", "local", HF_HUB_OFFLINE="1")
    assert locked.returncode == 0, locked.stderr
    offline = json.loads(project.lock_path("local").read_text())["model"]
    assert offline["sha"] == commit
    fetched = project.repro("fetch", "local", HF_HUB_OFFLINE="1")
    assert fetched.returncode == 0, fetched.stderr
    assert project.hub.log == []

    project.lock()  # the same files on the Hub, locked over HTTP
    online = json.loads(project.lock_path().read_text())["model"]
    assert offline["files"] == online["files"] and offline["total_bytes"] == online["total_bytes"]


def test_an_unpublished_model_offline_is_one_clear_error(project: Project) -> None:
    result = project.repro("lock", "small", HF_HUB_OFFLINE="1")
    assert result.returncode != 0
    assert "org/model@main is not in the Hub cache" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_published_folder_is_a_snapshot_of_the_same_files(tmp_path: Path) -> None:
    """publish_folder (what the twins and scripts/gpu-engine use): every file, nested ones
    too, under the commit `main` points at, as publish_to_cache names it."""
    folder = tmp_path / "model"
    for f in model_files():
        (folder / f.path).parent.mkdir(parents=True, exist_ok=True)
        (folder / f.path).write_bytes(f.data)
    snapshot = publish_folder("org/folder", folder, tmp_path / "hub")
    commit = (snapshot.parents[1] / "refs" / "main").read_text()
    assert snapshot.name == commit == publish_to_cache("org/folder", _files(), tmp_path / "hub")
    assert {p.relative_to(snapshot).as_posix(): p.read_bytes()
            for p in snapshot.rglob("*") if p.is_file()} == _files()  # fmt: skip
