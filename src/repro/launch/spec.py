"""What a launch needs, independent of where it came from (a recipe, a lock, a test)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import BaseModel, Field

from repro.settings import STATE_DIR

SERVICE = "sglang"


def state_dir() -> Path:
    """Where repro keeps deployment state: REPRO_STATE_DIR, else `.repro` here."""
    return Path(STATE_DIR.text())


def state_id(state_dir: Path) -> str:
    """A short id of a state directory (a checkout's `.repro`, or REPRO_STATE_DIR), so two
    checkouts on one Docker engine never share a Compose project."""
    return hashlib.sha256(str(state_dir.resolve()).encode()).hexdigest()[:6]


def project_name(name: str, state_dir: Path) -> str:
    """The Compose project of deployment `name` kept in `state_dir`: a recipe name may hold
    '.', which Compose refuses in a project name, so it becomes '_'."""
    return f"repro-{name.replace('.', '_')}-{state_id(state_dir)}"


class LaunchSpec(BaseModel):
    """One SGLang server deployment, ready to be written as a Compose override."""

    name: str = Field(description="Deployment name, as `repro stop/status/logs` take it.")
    compose_project: str | None = Field(
        default=None,
        description="`repro-<name>-<state id>` (project_name); None in a spec written before "
        "it existed, whose project is `repro-<name>`.",
    )
    image: str = Field(description="Image reference, by digest or local image ID when known.")
    argv: list[str] = Field(description="Arguments after `python3 -m sglang.launch_server`.")
    env: dict[str, str] = Field(default_factory=dict)
    port: int = Field(description="Port the server listens on inside the container.")
    host_port: int = Field(description="Port published on 127.0.0.1 of this machine.")
    gpu_ids: list[str] | None = Field(
        description="GPU device IDs to reserve; None means no GPU reservation (an explicit "
        "`topology.gpu_runtime: none`, e.g. the simulator)."
    )
    hf_cache: Path = Field(description="Host Hub cache (HF_HUB_CACHE), mounted for the server.")
    required_snapshots: dict[str, Path] = Field(
        default_factory=dict,
        description="`repo@sha` -> host snapshot directory that must exist before launch.",
    )
    memlock_bytes: int | None = Field(
        default=None,
        description="Locked-memory limit; None keeps the base file's unlimited (SGLang's "
        "practice for GPU servers: pinned host buffers).",
    )
    start_period_s: int = Field(
        default=1800, description="Healthcheck grace period: covers weight loading."
    )
    health_timeout_s: float = Field(
        default=3600, description="How long `repro launch` waits for /health_generate."
    )

    @property
    def project(self) -> str:
        return self.compose_project or f"repro-{self.name}"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.host_port}"
