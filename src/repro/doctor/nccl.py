"""NCCL environment and SGLang flags per interconnect class.

NCCL_P2P_LEVEL values follow NCCL's environment-variable documentation (LOC, NVL, PIX, PXB,
PHB = P2P within a NUMA node through the CPU, SYS = also across the SMP interconnect);
nvidia-smi's NODE cell is NCCL's PHB. `--disable-custom-all-reduce` is a server option of
SGLang 0.5.23 (its option catalog, package data `repro/catalogs/sglang-0.5.23.json`).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from repro.doctor.models import InterconnectClass


class NcclAdvice(BaseModel):
    """NCCL environment and server flags suggested for an interconnect class."""

    interconnect: InterconnectClass
    env: dict[str, str] = Field(default_factory=dict)
    server_args: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


P2P_FALLBACK = (
    "if NCCL hangs at start-up or all-reduce is very slow (IOMMU or PCIe ACS on), "
    "use NCCL_P2P_DISABLE=1 instead of NCCL_P2P_LEVEL"
)


def nccl_advice(cls: InterconnectClass) -> NcclAdvice:
    """What to set for NCCL and SGLang on a machine (or GPU set) of class `cls`."""
    if cls is InterconnectClass.ALL_NVLINK:
        return NcclAdvice(
            interconnect=cls,
            notes=[
                "NVLink all-to-all: NCCL's defaults are right; leave NCCL_P2P_* unset and custom "
                "all-reduce on"
            ],
        )
    if cls is InterconnectClass.PARTIAL_NVLINK:
        return NcclAdvice(
            interconnect=cls,
            server_args=["--disable-custom-all-reduce"],
            notes=[
                "pin the deployment to GPUs that are all NVLink-connected; custom all-reduce needs "
                "every pair linked, so turn it off when the GPU set mixes NVLink and PCIe"
            ],
        )
    if cls.is_pcie:
        notes = [
            "PCIe only: NCCL P2P through the host bridge within a NUMA node "
            "(NCCL_P2P_LEVEL=PHB); custom all-reduce relies on P2P and can fail or hang "
            "on PCIe, so it is turned off",
            P2P_FALLBACK,
            "SGLang 0.5.22+ has an all-reduce for switch-free PCIe boxes: set "
            "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE=1 (TP 2, 4 or 8; upstream measured TP8 decode "
            "35 -> 48 tok/s on 8x sm_120, srt/distributed/device_communicators/pcie_ipc_ar.py)",
        ]
        if cls is InterconnectClass.PCIE_CROSS_NUMA:
            notes.append(
                "GPUs on different sockets talk through host memory over QPI/UPI; "
                "keep TP/EP groups within one NUMA node where the layout allows"
            )
        return NcclAdvice(
            interconnect=cls,
            env={"NCCL_P2P_LEVEL": "PHB"},
            server_args=["--disable-custom-all-reduce"],
            notes=notes,
        )
    return NcclAdvice(interconnect=cls)
