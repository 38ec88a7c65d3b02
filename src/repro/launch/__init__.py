"""Health-gated Docker Compose deployments of a recipe's SGLang server."""

from repro.launch.deploy import (
    LaunchError,
    launch,
    load_spec,
    prepare_deployment,
    status,
    stop,
)
from repro.launch.spec import LaunchSpec

__all__ = [
    "LaunchError",
    "LaunchSpec",
    "launch",
    "load_spec",
    "prepare_deployment",
    "status",
    "stop",
]
