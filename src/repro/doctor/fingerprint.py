"""The machine fingerprint: what doctor checks against and what every run record stores."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from pydantic import BaseModel, Field

from repro.doctor.host import (
    DiskInfo,
    DockerInfo,
    cpu_count,
    cpu_model,
    disk_info,
    docker_info,
    kernel_release,
    numa_node_count,
)
from repro.doctor.interconnect import classify
from repro.doctor.models import GpuInfo, InterconnectClass, TopoMatrix
from repro.doctor.nvidia import collect_nvidia
from repro.doctor.probe import last_probe
from repro.doctor.runner import (
    Runner,
    find_executable,
    run_command,
)
from repro.schema.machine import InterconnectProbe, MachineInfo
from repro.settings import DOCKER, NVIDIA_SMI

SCHEMA_VERSION = 1


class MachineFingerprint(BaseModel):
    """GPUs, their links, driver/CUDA, Docker's GPU support, disk and host facts of one machine."""

    schema_version: int = SCHEMA_VERSION
    collected_at: datetime
    hostname: str
    kernel: str
    cpu_model: str | None = None
    cpu_count: int
    numa_nodes: int | None = None
    nvidia_smi: str | None = Field(default=None, description="nvidia-smi used; None: absent")
    driver_version: str | None = None
    cuda_version: str | None = Field(default=None, description="highest CUDA the driver supports")
    gpus: list[GpuInfo] = Field(default_factory=list)
    topology: TopoMatrix | None = None
    interconnect: InterconnectClass = InterconnectClass.NONE
    docker: DockerInfo
    disk: DiskInfo
    problems: list[str] = Field(
        default_factory=list, description="what could not be read while collecting, and why"
    )
    interconnect_probe: InterconnectProbe | None = Field(
        default=None,
        description="all-reduce bus bandwidth measured by `repro doctor --probe` (the last "
        "probe of exactly these GPUs)",
    )

    def recorded(self) -> MachineInfo:
        """What a run folder's machine.json keeps of it: every key, as `MachineInfo`."""
        return MachineInfo.model_validate(self.model_dump(mode="json"))

    @property
    def gpu_uuids(self) -> list[str]:
        return [g.uuid for g in self.gpus if g.uuid]

    @property
    def gpu_models(self) -> list[str]:
        return sorted({g.name for g in self.gpus})

    @property
    def architectures(self) -> list[str]:
        return sorted({g.compute_cap for g in self.gpus if g.compute_cap})


def collect_fingerprint(
    runner: Runner = run_command,
    env: Mapping[str, str] | None = None,
    repos: Sequence[str] = (),
) -> MachineFingerprint:
    """Inspect this machine. Never raises for a missing tool: absences are data.

    `env` (default `os.environ`) supplies PATH, REPRO_NVIDIA_SMI / REPRO_DOCKER (the executables
    to use instead of PATH's) and the Hub cache variables; `repos` are model repos whose bytes
    already in the Hub cache are recorded (`disk.cached_bytes`).
    """
    environ = dict(os.environ if env is None else env)
    nvidia = collect_nvidia(find_executable("nvidia-smi", NVIDIA_SMI, environ), runner)
    if nvidia.executable is None:
        where = NVIDIA_SMI.read(environ)
        nvidia.problems.insert(
            0,
            f"{NVIDIA_SMI.name}={where} is not an executable"
            if where
            else "nvidia-smi not found on PATH: no NVIDIA driver on this machine",
        )
    docker = docker_info(find_executable("docker", DOCKER, environ), runner)
    gpu_count = len(nvidia.gpus)
    gpu_names = {f"GPU{g.index}" for g in nvidia.gpus}
    if nvidia.topology is not None and set(nvidia.topology.gpu_indices) != {
        g.index for g in nvidia.gpus
    }:
        nvidia.problems.append(
            f"`nvidia-smi topo -m` lists {len(nvidia.topology.gpu_indices)} GPUs but the query "
            f"lists {gpu_count} ({', '.join(sorted(gpu_names))})"
        )
    return MachineFingerprint(
        collected_at=datetime.now(UTC),
        hostname=socket.gethostname(),
        kernel=kernel_release(),
        cpu_model=cpu_model(),
        cpu_count=cpu_count(),
        numa_nodes=numa_node_count(),
        nvidia_smi=nvidia.executable,
        driver_version=nvidia.driver_version,
        cuda_version=nvidia.cuda_version,
        gpus=nvidia.gpus,
        topology=nvidia.topology,
        interconnect=classify(nvidia.topology, gpu_count),
        docker=docker,
        disk=disk_info(environ, repos),
        problems=nvidia.problems,
        interconnect_probe=last_probe([g.uuid for g in nvidia.gpus if g.uuid]),
    )
