"""The registry-free base image and the Docker toolchain, on the real engine."""

from __future__ import annotations

import subprocess

import pytest

from repro.image.base import base_tag, ensure_base_image
from repro.image.engine import client

pytestmark = pytest.mark.docker


def test_ensure_docker_is_quiet_and_idempotent_when_everything_is_there(repo_root) -> None:
    result = subprocess.run(
        [str(repo_root / "scripts" / "ensure-docker")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and result.stderr == ""


def test_compose_and_buildx_plugins_meet_the_minimum() -> None:
    compose = subprocess.run(
        ["docker", "compose", "version", "--short"], capture_output=True, text=True, check=True
    )
    major, minor = (int(part) for part in compose.stdout.strip().lstrip("v").split(".")[:2])
    assert (major, minor) >= (2, 17)
    subprocess.run(["docker", "buildx", "version"], capture_output=True, check=True)


def test_base_image_runs_python_with_aiohttp_and_git() -> None:
    tag = ensure_base_image()
    assert tag in (base_tag("slim"), base_tag("mmdebstrap"))
    output = client().run(
        tag,
        [
            "python3",
            "-c",
            "import aiohttp, subprocess; "
            "print(subprocess.run(['git', '--version'], capture_output=True, text=True).stdout)",
        ],
        remove=True,
    )
    assert "git version" in str(output)


def test_base_image_is_made_once_and_found_again_by_its_content_tag() -> None:
    first = ensure_base_image()
    image_id = client().image.inspect(first).id
    assert ensure_base_image() == first
    assert client().image.inspect(first).id == image_id
