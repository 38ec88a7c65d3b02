"""What repro measured about a machine beyond what nvidia-smi says: the interconnect probe.

`repro doctor --probe` fills it (repro.doctor.probe); the machine fingerprint, and so every
run record's machine.json, carries the last probe of the same GPUs.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
)

# NVLink SHARP / multicast off: NCCL, torch symmetric memory and NVSHMEM each have a switch.
PROBE_ENV = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}

ProbeStatus = Literal["measured", "nothing-to-probe", "unavailable", "failed"]


class ProbePoint(BaseModel):
    """One message size of the sweep (nccl-tests' definitions)."""

    size_bytes: int
    time_us: float = Field(description="mean time of one all-reduce")
    algbw_gbps: float = Field(description="bytes / time, GB/s")
    busbw_gbps: float = Field(description="algbw x 2(n-1)/n: comparable with the link's peak")


class InterconnectProbe(BaseModel):
    """What `repro doctor --probe` measured (or why it measured nothing)."""

    status: ProbeStatus
    message: str
    gpus: int = Field(description="ranks, one per GPU")
    gpu_uuids: list[str] = Field(default_factory=list, description="the GPUs probed")
    backend: str = "nccl"
    where: str = Field(default="", description="host python, or the image the probe ran in")
    env: dict[str, str] = Field(default_factory=lambda: dict(PROBE_ENV))
    versions: dict[str, str] = Field(default_factory=dict, description="torch, nccl")
    points: list[ProbePoint] = Field(default_factory=list)

    @property
    def peak_busbw_gbps(self) -> float | None:
        return max((p.busbw_gbps for p in self.points), default=None)

    @property
    def summary(self) -> str:
        """One line for tables: `busbw 118 GB/s peak (8 GPUs)` or the reason there is none."""
        peak = self.peak_busbw_gbps
        if peak is None:
            return self.message
        ranks = "GPUs" if self.backend == "nccl" else "CPU ranks"
        return f"all-reduce busbw {peak:,.1f} GB/s peak ({self.gpus} {ranks}, {self.backend})"


class RecordedGpu(BaseModel):
    """One GPU of `machine.json` (topology's GpuInfo, as far as reports read it)."""

    model_config = ConfigDict(extra="allow")

    name: str = "?"
    compute_cap: str | None = None


class MachineInfo(BaseModel):
    """`machine.json` (topology's MachineFingerprint, as far as reports read it)."""

    model_config = ConfigDict(extra="allow")

    hostname: str | None = None
    kernel: str | None = None
    cpu_model: str | None = None
    cpu_count: int | None = None
    numa_nodes: int | None = None
    driver_version: str | None = None
    cuda_version: str | None = Field(default=None, description="highest CUDA the driver supports")
    gpus: list[RecordedGpu] = Field(default_factory=list)
    interconnect: str | None = Field(default=None, description="e.g. all-nvlink, pcie-cross-numa")
    interconnect_probe: InterconnectProbe | None = Field(
        default=None, description="the last `repro doctor --probe` of these GPUs"
    )
    docker: dict[str, Any] = Field(default_factory=dict)


def hardware_label(machine: MachineInfo | None) -> str:
    """e.g. `8x RTX PRO 6000 Blackwell, pcie-cross-numa`; `no GPUs` on a CPU box."""
    if machine is None:
        return "unknown"
    if not machine.gpus:
        return "no GPUs"
    names = sorted({g.name.removeprefix("NVIDIA ").strip() for g in machine.gpus})
    return f"{len(machine.gpus)}x {'+'.join(names)}, {machine.interconnect or 'unknown'}"
