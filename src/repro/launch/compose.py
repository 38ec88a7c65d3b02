"""The per-run Compose override and the python-on-whales client bound to it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from python_on_whales import DockerClient

from repro.fsutil import write_atomic
from repro.launch.spec import SERVICE, LaunchSpec

BASE_COMPOSE = Path(__file__).resolve().parents[3] / "compose" / "sglang.yaml"
OVERRIDE_NAME = "compose.override.yaml"
CONTAINER_HUB_CACHE = "/root/.cache/huggingface/hub"


def render_override(spec: LaunchSpec) -> dict[str, Any]:
    """The override document: everything that varies between deployments."""
    health_probe = (
        "import urllib.request; "
        f"urllib.request.urlopen('http://127.0.0.1:{spec.port}/health_generate', timeout=20)"
    )
    service: dict[str, Any] = {
        "image": spec.image,
        # A YAML list: the argv reaches SGLang exactly, no shell in between.
        "command": [literal(arg) for arg in spec.argv],
        "ports": [f"127.0.0.1:{spec.host_port}:{spec.port}"],
        "volumes": [f"{spec.hf_cache}:{CONTAINER_HUB_CACHE}"],
        "healthcheck": {
            "test": ["CMD", "python3", "-c", health_probe],
            "interval": "10s",
            "timeout": "30s",
            "retries": 3,
            "start_period": f"{spec.start_period_s}s",
        },
        "labels": {"dev.repro.deployment": spec.name},
    }
    if spec.memlock_bytes is not None:
        limit = spec.memlock_bytes
        service["ulimits"] = {"memlock": {"soft": limit, "hard": limit}}
    if spec.env:
        service["environment"] = {key: literal(value) for key, value in sorted(spec.env.items())}
    if spec.gpu_ids is not None:
        service["deploy"] = {
            "resources": {
                "reservations": {
                    "devices": [
                        {"driver": "nvidia", "device_ids": spec.gpu_ids, "capabilities": ["gpu"]}
                    ]
                }
            }
        }
    return {"name": spec.project, "services": {SERVICE: service}}


def literal(value: str) -> str:
    """`value` as Compose passes it on unchanged: Compose interpolates `$VAR` and `${VAR}`
    from the host's environment (HF_TOKEN included) and fails on `${VAR:?msg}`; `$$` is its
    escape for one literal `$`."""
    return value.replace("$", "$$")


def write_override(spec: LaunchSpec, directory: Path) -> Path:
    """Write the override atomically and return its path."""
    path = directory / OVERRIDE_NAME
    text = (
        "# Written by `repro launch`; use with compose/sglang.yaml:\n"
        f"#   docker compose -f {BASE_COMPOSE} -f {path} up -d\n"
        + yaml.safe_dump(render_override(spec), sort_keys=False)
    )
    write_atomic(path, text)
    return path


def compose_client(project: str, override: Path) -> DockerClient:
    return DockerClient(compose_files=[BASE_COMPOSE, override], compose_project_name=project)


def compose_command(project: str, override: Path, *args: str) -> list[str]:
    """The equivalent `docker compose` command line, for --dry-run and messages."""
    return [
        "docker",
        "compose",
        "-p",
        project,
        "-f",
        str(BASE_COMPOSE),
        "-f",
        str(override),
        *args,
    ]
