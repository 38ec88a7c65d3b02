"""A tampered or careless lock is refused on read with one line naming the field, before any
docker call: an unknown lock version, malformed digests and references (`--help` is not an
image), wrong types."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from repro.image.engine import BadReference, checked_reference
from tests.support.cli import isolated_env, repro

DIGEST = "sha256:" + "a" * 64
IMAGE = {"reference": "repro/sim:0.5.23-1a2b", "fingerprint": DIGEST, "image_id": DIGEST}

Mutation = Callable[[dict[str, Any]], None]


def _image(**fields: Any) -> Mutation:
    return lambda d: d.update(image={**IMAGE, **fields})


MUTATIONS: dict[str, tuple[Mutation, str]] = {
    "version 999": (lambda d: d.update(lock_version=999), "lock_version: this repro reads"),
    "version as text": (lambda d: d.update(lock_version="1"), "lock_version: expected an integer"),
    "patches as text": (lambda d: d.update(patches="x"), "patches: expected a list"),
    "files as text": (lambda d: d["model"].update(files="x"), "model.files: expected a list"),
    "reference --help": (_image(reference="--help"), "image.reference: expected an image ref"),
    "reference newline": (_image(reference="a/b\n--x"), "image.reference: expected an image"),
    "digest xyz": (_image(digest="sha256:xyz"), "image.digest: expected a digest"),
    "fingerprint xyz": (_image(fingerprint="md5:1"), "image.fingerprint: expected a digest"),
    "pinned tag only": (_image(pinned="reg/x:1"), "image.pinned: expected a pinned reference"),
    "sha injected": (lambda d: d["model"].update(sha="$(id)"), "model.sha: expected a full"),
    "repo option": (lambda d: d["model"].update(repo="--help"), "model.repo: expected a Hugging"),
}


@pytest.fixture(scope="module")
def demo_lock(tmp_path_factory: pytest.TempPathFactory, repo_root: Path) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("lock")
    result = repro("lock", "demo", cwd=repo_root, env=isolated_env(tmp), timeout=120)
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads((tmp / "locks" / "demo.lock.json").read_text())
    return data


@pytest.mark.parametrize("case", sorted(MUTATIONS))
def test_a_malformed_lock_is_refused_with_its_field(
    case: str, demo_lock: dict[str, Any], repo_root: Path, tmp_path: Path
) -> None:
    mutate, expected = MUTATIONS[case]
    data = copy.deepcopy(demo_lock)
    mutate(data)
    path = tmp_path / "demo.lock.json"
    path.write_text(json.dumps(data))
    for command in (["image", "verify"], ["launch", "--dry-run"]):
        result = repro(*command, str(path), cwd=repo_root, env=isolated_env(tmp_path))
        assert result.returncode != 0
        assert "Traceback" not in result.stderr
        [error] = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert expected in error, error


@pytest.mark.parametrize(
    "value", ["--help", "-q", "a b", "x\n", "x;rm", "$(id)", "`id`", "UPPER/x:tag y", ""]
)
def test_checked_reference_refuses_what_is_not_a_reference(value: str) -> None:
    with pytest.raises(BadReference):
        checked_reference(value)


@pytest.mark.parametrize(
    "value",
    [
        "repro/sim:0.5.23-1a2b",
        "127.0.0.1:5000/team/sglang-nightly-cu13:0.5.23-1a2b3c4d5e6f",
        f"lmsysorg/sglang:v0.5.3@{DIGEST}",
        f"localhost:5000/x@{DIGEST}",
        DIGEST,
    ],
)
def test_checked_reference_keeps_references(value: str) -> None:
    assert checked_reference(value) == value
