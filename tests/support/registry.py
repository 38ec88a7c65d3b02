"""A real Docker registry on 127.0.0.1 with htpasswd auth (Debian's docker-registry)."""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.support.ports import free_port


@dataclass
class Registry:
    host: str  # 127.0.0.1:PORT
    user: str
    password: str


@contextmanager
def running_registry(
    workdir: Path, user: str = "tester", password: str = "s3cret-pw", port: int | None = None
) -> Iterator[Registry]:
    binary = shutil.which("docker-registry")
    assert binary, "docker-registry is missing: `make test` installs it (scripts/ensure-test-tools)"
    port = port or free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    htpasswd = workdir / "htpasswd"
    subprocess.run(
        ["htpasswd", "-Bbc", str(htpasswd), user, password], check=True, capture_output=True
    )
    config = {
        "version": 0.1,
        "log": {"level": "error"},
        "storage": {
            "filesystem": {"rootdirectory": str(workdir / "data")},
            "delete": {"enabled": True},
        },
        "http": {"addr": f"127.0.0.1:{port}"},
        "auth": {"htpasswd": {"realm": "repro-test", "path": str(htpasswd)}},
    }
    config_path = workdir / "config.yml"
    config_path.write_text(yaml.safe_dump(config))
    process = subprocess.Popen(
        [binary, "serve", str(config_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        _wait_answering(f"http://127.0.0.1:{port}/v2/")
        yield Registry(host=f"127.0.0.1:{port}", user=user, password=password)
    finally:
        process.terminate()
        process.wait(timeout=10)


def docker_login(
    registry: Registry, password: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`docker login` into DOCKER_CONFIG's credential store, as a user would before a push."""
    return subprocess.run(
        ["docker", "login", registry.host, "-u", registry.user, "--password-stdin"],
        input=registry.password if password is None else password,
        capture_output=True,
        text=True,
    )


def _wait_answering(url: str) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except urllib.error.HTTPError:
            return  # 401 means it is up
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"registry at {url} did not start")
