"""What a test left running: containers of one deployment, found by their Compose labels."""

from __future__ import annotations

from python_on_whales import Container

from repro.image.engine import client


def deployment_containers(name: str) -> list[Container]:
    """Containers (running or not) of the deployment `name` (Compose project repro-<name>)."""
    return list(
        client().container.list(
            all=True, filters=[("label", f"com.docker.compose.project=repro-{name}")]
        )
    )
