"""The machine check: GPU inventory and topology, the machine fingerprint, and doctor's checks.

    fp = collect_fingerprint()                 # nvidia-smi, docker info, disk, host
    report = diagnose(fp, Requirements(gpus=8, interconnect="pcie", architectures=["12.0"]))
    report.ok, report.findings, report.nccl

`REPRO_NVIDIA_SMI` / `REPRO_DOCKER` name the executables to use instead of PATH's.
"""

from __future__ import annotations

from repro.doctor.arch import arch_for_name
from repro.doctor.checks import MachineCheck, check_machine
from repro.doctor.fingerprint import MachineFingerprint, collect_fingerprint
from repro.doctor.host import DiskInfo, DockerInfo
from repro.doctor.interconnect import best_gpu_set, classify
from repro.doctor.models import GpuAffinity, GpuInfo, InterconnectClass, TopoMatrix
from repro.doctor.nccl import NcclAdvice, nccl_advice
from repro.doctor.nvidia import NvidiaSmiParseError, parse_banner, parse_query_gpu, parse_topo
from repro.doctor.report import DoctorReport, diagnose, run_doctor
from repro.doctor.requirements import (
    Requirements,
    requirements_from_locked,
)
from repro.doctor.runner import CommandResult, Runner, run_command

__all__ = [
    "CommandResult",
    "DiskInfo",
    "DockerInfo",
    "DoctorReport",
    "GpuAffinity",
    "GpuInfo",
    "InterconnectClass",
    "MachineCheck",
    "MachineFingerprint",
    "NcclAdvice",
    "NvidiaSmiParseError",
    "Requirements",
    "Runner",
    "TopoMatrix",
    "arch_for_name",
    "best_gpu_set",
    "check_machine",
    "classify",
    "collect_fingerprint",
    "diagnose",
    "nccl_advice",
    "parse_banner",
    "parse_query_gpu",
    "parse_topo",
    "requirements_from_locked",
    "run_command",
    "run_doctor",
]
