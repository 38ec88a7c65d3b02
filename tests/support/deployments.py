"""What a test left running: containers of one deployment, found by their Compose labels."""

from __future__ import annotations

from pathlib import Path

from python_on_whales import Container

from repro.image.engine import client
from repro.launch.spec import project_name, state_dir


def deployment_containers(name: str, state: Path | None = None) -> list[Container]:
    """Containers (running or not) of the deployment `name` kept in `state` (default: this
    process's REPRO_STATE_DIR), so a test never sees a user's deployment of the same name."""
    project = project_name(name, state or state_dir())
    return list(
        client().container.list(
            all=True, filters=[("label", f"com.docker.compose.project={project}")]
        )
    )
