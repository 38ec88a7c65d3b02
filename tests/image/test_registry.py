"""Push, pull by digest, verify and export against a real registry on 127.0.0.1."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from repro.image.engine import client
from repro.image.fingerprint import content_fingerprint
from repro.image.registry import RegistryError, export_archive, pull, push, verify
from tests.support.ports import free_port_ending
from tests.support.registry import Registry, docker_login, running_registry

pytestmark = pytest.mark.docker


def test_push_delete_pull_by_digest_verify(registry: Registry, sim_image: str) -> None:
    assert docker_login(registry).returncode == 0
    fingerprint = content_fingerprint(sim_image)
    shown: list[str] = []
    pushed = push(sim_image, f"{registry.host}/team", shown.append)
    # The user sees layers and bytes as they go, ending with every layer done.
    done = re.fullmatch(r"(\d+)/(\d+) layers done, .* of .* sent", shown[-1])
    assert done is not None and done[1] == done[2], shown
    assert pushed.pinned.startswith(f"{registry.host}/team/") and "@sha256:" in pushed.pinned
    assert push(sim_image, f"{registry.host}/team").digest == pushed.digest  # idempotent

    client().image.remove(pushed.reference)
    pull(pushed.pinned)
    assert verify(pushed.pinned, fingerprint) == fingerprint


def test_a_version_tag_is_never_moved_to_new_content(
    registry: Registry, sim_image: str, tmp_path: Path
) -> None:
    assert docker_login(registry).returncode == 0
    push(sim_image, f"{registry.host}/team")
    original_id = client().image.inspect(sim_image).id
    (tmp_path / "Dockerfile").write_text(f"FROM {sim_image}\nRUN echo changed > /changed\n")
    # Same local tag, different content: what a non-deterministic rebuild would produce.
    client().build(tmp_path, tags=[sim_image], load=True, progress=False)
    try:
        with pytest.raises(RegistryError, match="never moves a version tag"):
            push(sim_image, f"{registry.host}/team")
    finally:
        changed_id = client().image.inspect(sim_image).id
        client().image.tag(original_id, sim_image)
        client().image.remove(changed_id, force=True)


def test_wrong_password_and_missing_tag_give_clear_errors(
    registry: Registry, sim_image: str
) -> None:
    assert docker_login(registry, "wrong-password").returncode != 0
    with pytest.raises(RegistryError, match="docker login"):
        push(sim_image, f"{registry.host}/team")
    assert docker_login(registry).returncode == 0
    with pytest.raises(RegistryError, match="is not in the registry"):
        pull(f"{registry.host}/team/sim@sha256:{'0' * 64}")


def test_a_registry_whose_port_reads_401_is_not_taken_for_a_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker-config"))
    with running_registry(tmp_path / "registry", port=free_port_ending("401")) as registry:
        assert docker_login(registry).returncode == 0
        with pytest.raises(RegistryError, match="is not in the registry") as missing:
            pull(f"{registry.host}/team/sim@sha256:{'0' * 64}")
        assert missing.value.hint is None  # not "log in with `docker login ...`"


def test_save_load_keeps_the_fingerprint_and_tampering_is_caught(
    sim_image: str, tmp_path: Path
) -> None:
    fingerprint = content_fingerprint(sim_image)
    archive = export_archive(sim_image, tmp_path / "sim.tar")
    client().image.remove(sim_image, force=True)
    client().image.load(archive)
    assert content_fingerprint(sim_image) == fingerprint

    (tmp_path / "Dockerfile").write_text(f"FROM {sim_image}\nRUN echo evil >> /etc/motd\n")
    tampered = client().build(tmp_path, tags=["repro-test/tampered:1"], load=True, progress=False)
    try:
        with pytest.raises(RegistryError, match="does not match the lock"):
            verify("repro-test/tampered:1", fingerprint)
    finally:
        client().image.remove(tampered, force=True)
