"""Typed inventory of a machine's GPUs and of the links between them."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class InterconnectClass(StrEnum):
    """How the GPUs of a machine (or of a chosen GPU set) talk to each other."""

    ALL_NVLINK = "all-nvlink"
    PARTIAL_NVLINK = "partial-nvlink"
    PCIE_SINGLE_NUMA = "pcie-single-numa"
    PCIE_CROSS_NUMA = "pcie-cross-numa"
    SINGLE_GPU = "single-gpu"
    NONE = "none"
    UNKNOWN = "unknown"  # GPUs present but `nvidia-smi topo -m` could not be read

    @property
    def is_pcie(self) -> bool:
        return self in (InterconnectClass.PCIE_SINGLE_NUMA, InterconnectClass.PCIE_CROSS_NUMA)

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    InterconnectClass.ALL_NVLINK: "all GPUs linked by NVLink",
    InterconnectClass.PARTIAL_NVLINK: "NVLink between some GPUs only",
    InterconnectClass.PCIE_SINGLE_NUMA: "PCIe only, within one NUMA node",
    InterconnectClass.PCIE_CROSS_NUMA: "PCIe only, across NUMA nodes",
    InterconnectClass.SINGLE_GPU: "a single GPU",
    InterconnectClass.NONE: "no GPUs",
    InterconnectClass.UNKNOWN: "unknown (topology not readable)",
}


CapSource = Literal["nvidia-smi", "name-table", "unknown"]


class GpuInfo(BaseModel):
    """One row of `nvidia-smi --query-gpu=...`."""

    model_config = ConfigDict(frozen=True)

    index: int
    name: str
    uuid: str | None = None
    pci_bus_id: str | None = None
    memory_total_mib: int | None = None
    driver_version: str | None = None
    compute_cap: str | None = Field(
        default=None, description='e.g. "12.0"; from nvidia-smi or, on old drivers, the name table'
    )
    compute_cap_source: CapSource = "unknown"

    @property
    def memory_gb(self) -> float | None:
        """Total memory in decimal GB (10^9 bytes), the unit recipes use for min_gpu_memory_gb."""
        if self.memory_total_mib is None:
            return None
        return self.memory_total_mib * 2**20 / 1e9

    @property
    def short_name(self) -> str:
        return self.name.removeprefix("NVIDIA ").strip()


class GpuAffinity(BaseModel):
    """The affinity columns of one GPU row of `nvidia-smi topo -m` ("N/A" becomes None)."""

    cpu_affinity: str | None = None
    numa_affinity: str | None = None
    gpu_numa_id: str | None = None


_NVLINK = re.compile(r"^NV(\d+)$")


class TopoMatrix(BaseModel):
    """The `nvidia-smi topo -m` matrix: every device (GPUs, NICs) against every other."""

    devices: list[str] = Field(description='column order of the matrix, e.g. ["GPU0", "NIC0"]')
    matrix: dict[str, dict[str, str]] = Field(
        description='row device -> column device -> cell ("X", "NV18", "PIX", "NODE", "SYS", ...)'
    )
    affinity: dict[str, GpuAffinity] = Field(default_factory=dict, description="per GPU row")
    nics: dict[str, str] = Field(default_factory=dict, description='NIC legend: "NIC0" -> "mlx5_0"')

    @property
    def gpu_indices(self) -> list[int]:
        return [int(name[3:]) for name in self.devices if name.startswith("GPU")]

    def link(self, a: int, b: int) -> str | None:
        """The cell between GPU a and GPU b, or None when either is not in the matrix."""
        return self.matrix.get(f"GPU{a}", {}).get(f"GPU{b}")

    def nvlinks(self, a: int, b: int) -> int:
        """Number of bonded NVLinks between two GPUs (0 when they talk over PCIe)."""
        match = _NVLINK.match(self.link(a, b) or "")
        return int(match.group(1)) if match else 0

    def numa_node(self, gpu: int) -> str | None:
        aff = self.affinity.get(f"GPU{gpu}")
        return aff.numa_affinity if aff else None
