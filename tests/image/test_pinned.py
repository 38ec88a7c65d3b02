"""The image lifecycle by recipe, as a user runs it: build, push, pull by digest, verify."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.image.engine import client
from tests.support.cli import repro
from tests.support.ports import free_port
from tests.support.registry import docker_login, running_registry


@pytest.fixture
def user_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    import os

    env = {
        **os.environ,
        "REPRO_LOCKS_DIR": str(tmp_path / "locks"),
        "DOCKER_CONFIG": str(tmp_path / "docker-config"),
    }
    monkeypatch.setenv("DOCKER_CONFIG", env["DOCKER_CONFIG"])
    return env


@pytest.mark.docker
def test_build_push_pull_verify_through_the_lock(
    repo_root: Path, tmp_path: Path, user_env: dict[str, str]
) -> None:
    assert repro("lock", "demo", cwd=repo_root, env=user_env).returncode == 0
    built = repro("image", "build", "demo", "--json", cwd=repo_root, env=user_env)
    assert built.returncode == 0, built.stderr
    tag = json.loads(built.stdout)["tag"]
    lock_path = tmp_path / "locks" / "demo.lock.json"
    section = json.loads(lock_path.read_text())["image"]
    assert section["reference"] == tag and section["fingerprint"].startswith("sha256:")

    with running_registry(tmp_path / "registry") as registry:
        assert docker_login(registry).returncode == 0
        pushed = repro(
            "image",
            "push",
            "demo",
            "--registry",
            f"{registry.host}/team",
            cwd=repo_root,
            env=user_env,
        )
        assert pushed.returncode == 0, pushed.stderr
        pinned = pushed.stdout.strip()
        assert json.loads(lock_path.read_text())["image"]["pinned"] == pinned
        manifest = repro("export", "k8s", str(lock_path), cwd=repo_root, env=user_env)
        assert manifest.returncode == 0, manifest.stderr
        assert pinned.split("@")[1] in manifest.stdout  # other clusters run the same bytes

        client().image.remove(pinned, force=True)
        pulled = repro("image", "pull", "demo", cwd=repo_root, env=user_env)
        assert pulled.returncode == 0, pulled.stderr
        verified = repro("image", "verify", "demo", cwd=repo_root, env=user_env)
        assert verified.returncode == 0 and section["fingerprint"] in verified.stdout

        # The next machine: the lock alone runs the pinned deployment, image pulled by digest.
        client().image.remove(pinned, force=True)
        pinned_lock = lock_path.read_bytes()
        run = repro("run", str(lock_path), "--runs-dir", str(tmp_path / "runs"),
                     "--port", str(free_port()), cwd=repo_root, env=user_env)  # fmt: skip
        assert run.returncode == 0, run.stderr[-3000:]
        stages = json.loads(next((tmp_path / "runs").glob("*/stages.json")).read_text())
        summaries = {stage["name"]: stage["summary"] for stage in stages["stages"]}
        assert "as given" in summaries["lock"]
        assert summaries["image"] == f"pulled and verified {pinned}"
        assert lock_path.read_bytes() == pinned_lock  # nothing was re-resolved
        client().image.remove(pinned)


def test_push_without_a_built_image_says_to_build(
    repo_root: Path, user_env: dict[str, str]
) -> None:
    assert repro("lock", "demo", cwd=repo_root, env=user_env).returncode == 0
    result = repro(
        "image", "push", "demo", "--registry", "127.0.0.1:1/x", cwd=repo_root, env=user_env
    )
    assert result.returncode != 0 and "repro image build demo" in result.stderr
    assert "Traceback" not in result.stderr


def test_arch_check_refuses_a_gpu_the_image_has_no_kernels_for(
    repo_root: Path, user_env: dict[str, str]
) -> None:
    ok = repro(
        "image", "arch-check", "kimi26-ep4", "--compute-cap", "12.0", cwd=repo_root, env=user_env
    )
    assert ok.returncode == 0, ok.stderr
    refused = repro(
        "image", "arch-check", "kimi26-ep4", "--compute-cap", "8.0", cwd=repo_root, env=user_env
    )
    assert refused.returncode == 1 and "need 8.0" in refused.stderr
