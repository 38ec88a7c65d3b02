"""The hub stage in-process (what `repro fetch` calls) with huggingface_hub against the local Hub.

Calls pass `endpoint=` explicitly (huggingface_hub reads HF_ENDPOINT at import time); the
token comes from HF_TOKEN at call time, as in the CLI.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hubserver.fixtures import MODEL_WEIGHTS, Project
from hubserver.repos import random_bytes
from hubserver.server import HubServer
from repro.hub import (
    GatedRepoAccess,
    HubError,
    InsufficientSpace,
    SpaceMargin,
    VerificationFailed,
    fetch_pins,
    resolve_repo,
)
from repro.schema.lock import RepoPin

NO_MARGIN = SpaceMargin(fraction=0, keep_free=0)
MiB = 1 << 20


def _blob(cache: Path, pin: RepoPin, path: str) -> Path:
    assert pin.sha is not None
    return (
        cache / f"models--{pin.repo.replace('/', '--')}" / "snapshots" / pin.sha / path
    ).resolve()


def test_fetch_verifies_and_a_second_fetch_downloads_nothing(project: Project) -> None:
    project.lock()
    plan = project.fetch(dry_run=True)
    assert plan.needed_bytes == sum(r.total_bytes for r in plan.repos) > 0
    assert project.hub.downloads() == [] and not project.cache.exists()
    report = project.fetch()
    model, drafter = report.repos
    assert (model.files, drafter.files) == (8, 2)
    assert model.downloaded_bytes == model.total_bytes
    assert (model.hashed_files, drafter.hashed_files) == (2, 1)  # the LFS files: sha256 checked
    assert report.needed_bytes == model.total_bytes + drafter.total_bytes
    served = len(project.hub.downloads())
    again = project.fetch()
    assert [r.downloaded_bytes for r in again.repos] == [0, 0] and again.needed_bytes == 0
    assert len(project.hub.downloads()) == served


def test_resume_after_the_server_drops_the_connection_mid_file(
    hub: HubServer, tmp_path: Path
) -> None:
    size = 24 * MiB
    hub.add_repo("org/big", {"config.json": b"{}", "model.safetensors": random_bytes(size, 7)})
    hub.drop_after("model.safetensors", 15 * MiB)
    pin = resolve_repo("org/big", endpoint=hub.endpoint)
    report = fetch_pins([pin], cache_dir=tmp_path, endpoint=hub.endpoint, margin=NO_MARGIN)
    assert report.repos[0].hashed_files == 1  # sha256 matches the lock after the resume
    first, second = hub.downloads("model.safetensors")[-2:]
    assert first.range is None and first.sent == 15 * MiB  # dropped here
    # huggingface_hub resumes from its last flushed 10 MiB chunk with a Range request
    assert second.range == f"bytes={10 * MiB}-" and second.status == 206
    assert second.sent == size - 10 * MiB


def test_a_rerun_fetches_only_what_is_missing_and_clears_stale_partials(project: Project) -> None:
    project.lock()
    pin = project.fetch().repos[0]
    lock_pin = RepoPin.model_validate(json.loads(project.lock_path().read_text())["model"])
    weights = _blob(project.cache, lock_pin, "model-00001-of-00001.safetensors")
    os.unlink(weights)  # as if the process was killed during this file...
    stale = weights.parent / f"{weights.name}.0a1b2c3d.incomplete"
    stale.write_bytes(b"\0" * 100_000)  # ...leaving huggingface_hub's unresumable partial
    before = len(project.hub.downloads())
    events: list[str] = []
    report = project.fetch(on_event=events.append)
    assert report.removed_partial_bytes == 100_000 and not stale.exists()
    assert (
        report.repos[0].downloaded_bytes
        == weights.stat().st_size
        == pin.total_bytes
        - sum(f.size for f in lock_pin.files if not f.path.endswith(".safetensors"))
    )
    new = project.hub.downloads()[before:]
    assert [r.file for r in new] == ["model-00001-of-00001.safetensors"]
    assert any("downloading 1 of 8 files" in e for e in events)


def test_a_corrupted_download_is_caught_and_removed(project: Project) -> None:
    project.lock()
    project.hub.corrupt("model-00001-of-00001.safetensors")
    with pytest.raises(
        VerificationFailed, match=r"model-00001-of-00001\.safetensors: sha256"
    ) as err:
        project.fetch()
    assert err.value.hint and "removed" in err.value.hint
    snapshot = project.cache / "models--org--model" / "snapshots" / project.model.refs["main"]
    assert not (snapshot / "model-00001-of-00001.safetensors").exists()
    project.hub._corrupt.clear()
    again = project.fetch().repos[0]
    assert (again.downloaded_bytes, again.hashed_files) == (MODEL_WEIGHTS, 1)


def test_cached_files_are_checked_sizes_always_hashes_on_request(project: Project) -> None:
    project.lock()
    project.fetch()
    snapshot = project.cache / "models--org--drafter" / "snapshots" / project.drafter.refs["main"]
    blob = (snapshot / "model.safetensors").resolve()
    data = bytearray(blob.read_bytes())
    data[10] ^= 0xFF
    blob.write_bytes(bytes(data))  # same size, different content
    assert project.fetch().repos[1].hashed_files == 0  # nothing new: sizes only
    with pytest.raises(VerificationFailed, match=r"model\.safetensors: sha256"):
        project.fetch(verify_all=True)
    assert project.fetch().repos[1].downloaded_bytes == len(data)  # removed, so fetched again
    blob = (snapshot / "model.safetensors").resolve()
    blob.write_bytes(blob.read_bytes()[:-1])  # truncated: wrong size, downloaded again
    events: list[str] = []
    assert project.fetch(on_event=events.append).repos[1].downloaded_bytes == len(data)
    assert any("wrong size in the cache" in e for e in events)


def test_gated_repo_401_403_and_an_authorized_token(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "hf_" + "Zq7" * 12
    project.drafter.gated = "manual"
    project.drafter.authorized = {token}
    project.lock()  # the file list of a gated repo is public: locking needs no token
    with pytest.raises(GatedRepoAccess) as no_token:
        project.fetch()
    url = f"{project.hub.endpoint}/org/drafter"
    assert "org/drafter is gated" in no_token.value.message
    assert no_token.value.hint and f"request access at {url}" in no_token.value.hint
    assert "then set HF_TOKEN" in no_token.value.hint
    assert project.hub.downloads() == []  # checked before the model's bytes, too

    wrong = "hf_" + "Wr0ng" * 8
    monkeypatch.setenv("HF_TOKEN", wrong)
    with pytest.raises(GatedRepoAccess, match="has not been granted access") as forbidden:
        project.fetch()
    assert wrong not in str(forbidden.value) and wrong not in (forbidden.value.hint or "")

    monkeypatch.setenv("HF_TOKEN", token)
    report = project.fetch()
    assert report.repos[1].downloaded_bytes > 0
    texts = [project.lock_path().read_text(), report.model_dump_json()]
    texts += [p.read_bytes().decode("latin-1") for p in project.cache.rglob("*") if p.is_file()]
    assert not any(token in text for text in texts)
    cdn = [r for r in project.hub.log if r.origin == "cdn"]
    assert cdn and not any(r.authorization for r in cdn)  # the token never leaves the Hub


def test_a_gated_model_fails_on_its_own_first_request_with_the_same_advice(
    project: Project,
) -> None:
    project.model.gated = "manual"  # the first repository: no access check of its own
    project.lock()
    with pytest.raises(GatedRepoAccess) as no_token:
        project.fetch()
    assert "org/model is gated" in no_token.value.message
    assert no_token.value.hint and "then set HF_TOKEN" in no_token.value.hint
    assert not any(r.sent for r in project.hub.downloads())  # not a byte of any file
    assert not list(project.cache.rglob("*.safetensors"))


def test_offline_mode_uses_the_cache_and_names_what_is_missing(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.lock()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubError, match="HF_HUB_OFFLINE is set and 10 locked file") as err:
        project.fetch()
    assert err.value.hint and "unset HF_HUB_OFFLINE" in err.value.hint
    monkeypatch.delenv("HF_HUB_OFFLINE")
    project.fetch()
    project.hub.stop()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    report = project.fetch(verify_all=True)
    assert report.offline and [r.hashed_files for r in report.repos] == [2, 1]


def test_space_margin_on_a_real_small_filesystem(project: Project, tmpfs: Path) -> None:
    project.lock()
    cache = tmpfs / "hub"
    with pytest.raises(InsufficientSpace, match=r"1\.0 GiB margin") as err:
        project.fetch(cache_dir=cache, margin=SpaceMargin())  # 5% + 1 GiB does not fit in 4 MiB
    assert "--keep-free" in (err.value.hint or "")
    assert list(tmpfs.iterdir()) == []
    report = project.fetch(cache_dir=cache)  # without a margin, ~3 MiB fit
    assert report.free_bytes is not None and report.free_bytes <= 4 * MiB
    assert sum(r.downloaded_bytes for r in report.repos) == report.needed_bytes
