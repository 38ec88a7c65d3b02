"""The lock stage in-process (`lock_recipe` is what `repro lock` calls), against the local Hub."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from hubserver.fixtures import Project
from hubserver.tls import HttpsFiles
from repro.errors import ReproError
from repro.lock import load_locked, lock_recipe, read_lock, update_lock_image
from repro.schema.lock import LockedImage


def test_a_lock_is_a_recipe_and_relocking_it_changes_nothing(project: Project) -> None:
    result = project.lock()
    assert result.created and result.written
    path = project.lock_path()
    before = path.read_bytes()
    locked = load_locked(str(path))
    assert locked.recipe.name == "small" and locked.recipe.model.repo == "org/model"
    assert locked.lock is not None and locked.lock_path == path
    again = project.lock(str(path))
    assert again.path == path and not again.written
    assert path.read_bytes() == before
    assert project.lock(str(path), check=True).drift == []


def test_lock_records_patches_catalog_and_no_timestamps(project: Project) -> None:
    project.lock()
    data = json.loads(project.lock_path().read_text())
    patch = (project.root / "patches/fix/fix.patch").read_bytes()
    assert data["patches"] == [
        {
            "name": "fix.patch",
            "path": "patches/fix/fix.patch",
            "sha256": hashlib.sha256(patch).hexdigest(),
            "source": "local",
            "url": None,
        }
    ]
    assert data["catalog"]["sglang_version"] == "0.5.23" and data["catalog"]["flags"]
    assert data["image_spec"]["base"]["image"] == "lmsysorg/sglang"
    text = project.lock_path().read_text()
    assert "2026-" not in text.split('"catalog"')[0]  # nothing time-dependent


def test_image_section_survives_relock_until_spec_or_patches_change(project: Project) -> None:
    project.lock()
    path = project.lock_path()
    image = {"reference": "repro/sglang:abc", "digest": None, "fingerprint": "sha256:" + "1" * 64}
    stand_in = read_lock(path).catalog
    assert stand_in is not None
    catalog = dataclasses.replace(stand_in, source="extracted from repro/sglang:abc")
    update_lock_image(path, LockedImage.model_validate(image), catalog=catalog)
    data = json.loads(path.read_text())
    assert data["image"] == image and data["catalog"]["source"].startswith("extracted")
    assert path.read_text() == json.dumps(data, sort_keys=True, indent=2) + "\n"

    assert not project.lock().written  # unchanged recipe: the image section is kept
    assert read_lock(path).image == LockedImage.model_validate(image)

    patch = project.root / "patches/fix/fix.patch"
    patch.write_text(patch.read_text() + "+c\n")  # an image built from the old patch is stale
    check = project.lock(check=True)
    assert "patch fix.patch (local): changed" in check.drift
    project.lock(str(path))  # re-locking the lock itself: its image catalog is stale too
    relocked = read_lock(path)
    assert relocked.image is None
    assert relocked.catalog is not None
    assert not relocked.catalog.source.startswith("extracted")


def test_remote_diff_is_recorded_then_a_changed_diff_is_refused(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "patch-cache"
    monkeypatch.setenv("REPRO_PATCH_CACHE", str(cache))
    with HttpsFiles(tmp_path) as https:
        monkeypatch.setenv("SSL_CERT_FILE", str(https.cert_file))
        https.files["pr.diff"] = b"--- a/y.py\n+++ b/y.py\n"
        spec = project.root / "images/gpu.yaml"
        spec.write_text(
            spec.read_text()
            + f"  remote:\n    - name: pr-diff\n      url: {https.url('pr.diff')}\n"
        )
        project.lock()
        lock = read_lock(project.lock_path())
        pinned = hashlib.sha256(https.files["pr.diff"]).hexdigest()
        assert lock.patches[-1].model_dump() == {
            "name": "pr-diff",
            "source": "remote",
            "path": None,
            "url": https.url("pr.diff"),
            "sha256": pinned,
        }
        assert lock.image_spec is not None
        assert lock.image_spec.patch_set is not None
        assert lock.image_spec.patch_set.remote[0].sha256 == pinned

        before = project.lock_path().read_bytes()
        https.files["pr.diff"] += b"+sneaky\n"
        project.lock()  # fetched once: the pinned copy in the cache is what a lock uses
        assert project.lock_path().read_bytes() == before

        (cache / f"{pinned}.diff").unlink()  # a machine without it fetches the URL again
        moved = hashlib.sha256(https.files["pr.diff"]).hexdigest()
        with pytest.raises(
            ReproError, match=f"refusing to lock: patch pr-diff changed: .*{moved}.*pinned {pinned}"
        ):
            project.lock()
        assert project.lock_path().read_bytes() == before
        drift = project.lock(check=True).drift
        assert any("pr-diff" in line and "changed" in line for line in drift)


def test_simulated_recipe_locks_and_fetches_without_the_hub(project: Project) -> None:
    (project.root / "images/sim.yaml").write_text(
        'base: {image: repro-sim-base, local: true}\nsglang_version: "0.5.23"\nsimulated: true\n'
    )
    (project.root / "recipes/sim.yaml").write_text(
        "image: sim\nmodel: {repo: repro-sim/tiny-chat}\n"
        "topology: {gpus: 0, gpu_runtime: none}\nsimulator: {profile: demo}\n"
    )
    project.hub.stop()  # no Hub needed
    project.lock("sim")
    model = read_lock(project.lock_path("sim")).model
    assert model.simulated and model.sha is None and model.files == []
    events: list[str] = []
    report = project.fetch("sim", on_event=events.append)
    assert [r.simulated for r in report.repos] == [True]
    assert "repro-sim/tiny-chat: simulated deployment, no weights to fetch" in events
    assert not project.cache.exists()


def test_lock_errors_say_what_to_do(project: Project) -> None:
    with pytest.raises(ReproError, match="no lock to check"):
        project.lock(check=True)
    recipe = project.root / "recipes/small.yaml"
    recipe.write_text(recipe.read_text().replace("revision: main}", "revision: nope}", 1))
    with pytest.raises(ReproError, match="org/model has no revision 'nope'"):
        project.lock()
    recipe.write_text(recipe.read_text().replace("org/model", "org/absent"))
    with pytest.raises(ReproError, match="repository org/absent not found") as err:
        project.lock()
    assert err.value.hint and "HF_TOKEN" in err.value.hint
    project.hub.stop()
    with pytest.raises(ReproError, match="cannot reach the Hub"):
        lock_recipe(load_locked("small"), endpoint=project.hub.endpoint)


def test_fetch_needs_a_current_lock(project: Project) -> None:
    with pytest.raises(ReproError, match="not locked yet") as err:
        project.fetch()
    assert err.value.hint and "repro lock small" in err.value.hint
    project.lock()
    recipe = project.root / "recipes/small.yaml"
    recipe.write_text(
        recipe.read_text().replace("org/drafter, revision: main", "org/drafter, revision: v2")
    )
    with pytest.raises(ReproError, match="is stale"):
        project.fetch()
