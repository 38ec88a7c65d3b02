"""The rest of the machine: Docker engine and its GPU runtimes, Hub cache disk, CPU, kernel."""

from __future__ import annotations

import json
import os
import platform
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from repro.doctor.runner import CommandResult, Runner
from repro.hub.cache import storage_dir

DOCKER_TIMEOUT_S = 15.0


class DockerInfo(BaseModel):
    """From `docker info --format '{{json .}}'` (read only; nothing is started)."""

    available: bool = False
    executable: str | None = None
    server_version: str | None = None
    runtimes: list[str] = Field(default_factory=list)
    default_runtime: str | None = None
    nvidia_runtime: bool = Field(default=False, description='runtime "nvidia" registered')
    cdi_spec_dirs: list[str] = Field(default_factory=list)
    nvidia_cdi: bool = Field(default=False, description="nvidia.com/gpu CDI spec found")
    error: str | None = None

    @property
    def gpu_capable(self) -> bool:
        return self.nvidia_runtime or self.nvidia_cdi


def docker_info(executable: str | None, runner: Runner) -> DockerInfo:
    """Engine version and GPU runtimes; an absent or stopped engine is reported, not raised."""
    if executable is None:
        return DockerInfo(error="docker CLI not found on PATH")
    result = runner([executable, "info", "--format", "{{json .}}"], DOCKER_TIMEOUT_S)
    return parse_docker_info(result, executable)


def parse_docker_info(result: CommandResult, executable: str | None = None) -> DockerInfo:
    """Read the output of `docker info --format '{{json .}}'` (Runtimes, CDISpecDirs, ...)."""
    info = DockerInfo(executable=executable)
    try:
        data = json.loads(result.stdout) if result.stdout.strip() else {}
    except json.JSONDecodeError:
        data = {}
    errors = [str(e) for e in data.get("ServerErrors") or []] if isinstance(data, dict) else []
    if not isinstance(data, dict) or not result.ok or errors or not data.get("ServerVersion"):
        info.error = "; ".join(errors) if errors else result.describe_failure()
        return info
    runtimes = sorted((data.get("Runtimes") or {}).keys())
    spec_dirs = [str(d) for d in (data.get("CDISpecDirs") or [])]
    info.available = True
    info.server_version = data.get("ServerVersion")
    info.runtimes = runtimes
    info.default_runtime = data.get("DefaultRuntime")
    info.nvidia_runtime = "nvidia" in runtimes
    info.cdi_spec_dirs = spec_dirs
    info.nvidia_cdi = any(_has_nvidia_cdi_spec(Path(d)) for d in spec_dirs)
    return info


def _has_nvidia_cdi_spec(spec_dir: Path) -> bool:
    """True when a CDI spec for kind nvidia.com/gpu (as `nvidia-ctk cdi generate` writes) exists."""
    try:
        specs = [p for p in spec_dir.iterdir() if p.suffix in (".yaml", ".yml", ".json")]
    except OSError:
        return False
    for spec in specs:
        try:
            if "nvidia.com/gpu" in spec.read_text(errors="replace"):
                return True
        except OSError:
            continue
    return False


class DiskInfo(BaseModel):
    """Free space where the Hugging Face Hub cache lives (or would be created)."""

    hub_cache: str = Field(description="HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub")
    measured_at: str = Field(description="the nearest existing directory, whose filesystem counts")
    free_bytes: int
    total_bytes: int
    cached_bytes: dict[str, int] = Field(
        default_factory=dict, description="repo id -> bytes of it already in the Hub cache"
    )


def cached_repo_bytes(cache: Path, repo: str) -> int:
    """Bytes of model `repo` already in a Hub cache (blobs, including partial downloads)."""
    blobs = storage_dir(cache, repo) / "blobs"
    total = 0
    try:
        for blob in blobs.iterdir():
            if blob.is_file():
                total += blob.stat().st_size
    except OSError:
        return 0
    return total


def disk_info(env: Mapping[str, str], repos: Sequence[str] = ()) -> DiskInfo:
    """Free space at the Hub cache, and how much of each of `repos` is already there."""
    from repro.hub.cache import hub_cache_dir  # deferred: repro.hub loads huggingface_hub

    cache = hub_cache_dir(env)
    probe = cache
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    usage = shutil.disk_usage(probe)
    return DiskInfo(
        hub_cache=str(cache),
        measured_at=str(probe),
        free_bytes=usage.free,
        total_bytes=usage.total,
        cached_bytes={repo: cached_repo_bytes(cache, repo) for repo in repos},
    )


def cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def numa_node_count() -> int | None:
    try:
        nodes = [p for p in Path("/sys/devices/system/node").glob("node[0-9]*") if p.is_dir()]
    except OSError:
        return None
    return len(nodes) or None


def kernel_release() -> str:
    return platform.release()


def cpu_count() -> int:
    return os.cpu_count() or 0
