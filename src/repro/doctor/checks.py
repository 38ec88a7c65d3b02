"""Requirements vs fingerprint: pass / warn / fail findings, each with a message and a fix."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel

from repro.doctor.arch import sm_name
from repro.doctor.fingerprint import MachineFingerprint
from repro.doctor.interconnect import best_gpu_set, classify
from repro.doctor.models import GpuInfo, InterconnectClass
from repro.doctor.nccl import P2P_FALLBACK, nccl_advice
from repro.doctor.requirements import Requirements

Status = Literal["pass", "warn", "fail"]
GB = 1e9
DISK_HEADROOM = 1.05  # download temp files and metadata on top of the weights
DEMO_HINT = "run the whole pipeline on the CPU simulator instead: `make demo`"


class MachineCheck(BaseModel):
    """One result of `repro doctor`: a machine check that passed, warns or fails, and the fix."""

    check: str
    status: Status
    message: str
    fix: str | None = None


def _gb(value: float) -> str:
    return f"{value / GB:,.0f} GB" if value >= 10 * GB else f"{value / GB:,.1f} GB"


def _model_matches(name: str, accepted: str) -> bool:
    wanted = accepted.strip().removeprefix("NVIDIA ").strip()
    return bool(
        re.search(rf"(?<![A-Za-z0-9]){re.escape(wanted)}(?![A-Za-z0-9])", name, re.IGNORECASE)
    )


def _gpu_list(gpus: list[GpuInfo]) -> str:
    counts: dict[str, int] = {}
    for gpu in gpus:
        counts[gpu.short_name] = counts.get(gpu.short_name, 0) + 1
    return ", ".join(f"{n}x {name}" for name, n in counts.items()) or "no GPUs"


def check_machine(fp: MachineFingerprint, req: Requirements | None = None) -> list[MachineCheck]:
    """Every finding for `fp`, against `req` when given (else machine facts only)."""
    findings = [*_nvidia_findings(fp, req), *_gpu_findings(fp, req)]
    findings += _docker_findings(fp, req)
    findings.append(_disk_finding(fp, req))
    if req is not None and req.nodes > 1:
        findings.append(
            MachineCheck(
                check="nodes",
                status="warn",
                message=f"the recipe spans {req.nodes} nodes; doctor checks this node only",
                fix=f"run `repro doctor` on each of the {req.nodes} nodes",
            )
        )
    return findings


def _nvidia_findings(fp: MachineFingerprint, req: Requirements | None) -> list[MachineCheck]:
    if fp.nvidia_smi is None:
        needs = req is not None and req.needs_gpus
        return [
            MachineCheck(
                check="nvidia-smi",
                status="warn",
                message=fp.problems[0] if fp.problems else "nvidia-smi not found",
                fix=("install the NVIDIA driver, or " + DEMO_HINT) if needs else None,
            )
        ]
    found = [
        MachineCheck(
            check="nvidia-smi",
            status="pass" if fp.gpus else "warn",
            message=f"{fp.nvidia_smi}: {_gpu_list(fp.gpus)}, driver {fp.driver_version or '?'}, "
            f"CUDA {fp.cuda_version or '?'}",
            fix=None if fp.gpus else "check the driver with `nvidia-smi` by hand",
        )
    ]
    found += [MachineCheck(check="nvidia-smi", status="warn", message=p) for p in fp.problems]
    return found


def _gpu_findings(fp: MachineFingerprint, req: Requirements | None) -> list[MachineCheck]:
    if req is None or not req.needs_gpus:
        if req is not None:
            return [
                MachineCheck(
                    check="gpus",
                    status="pass",
                    message="the recipe needs no GPUs (gpu_runtime: none)",
                )
            ]
        return []
    need, have = req.gpus, len(fp.gpus)
    if have < need:
        fix = (
            (DEMO_HINT + f", or run this recipe on a machine with {need} GPUs")
            if have == 0
            else f"use a machine with {need} GPUs, or a recipe variant for {have}"
        )
        return [
            MachineCheck(
                check="gpus",
                status="fail",
                message=f"the recipe needs {need} GPUs; this machine has {_gpu_list(fp.gpus)}",
                fix=fix,
            )
        ]
    found = [
        MachineCheck(
            check="gpus",
            status="pass",
            message=f"{need} GPUs needed, {have} present ({_gpu_list(fp.gpus)})",
        )
    ]
    usable = fp.gpus
    if req.gpu_models:
        usable = [g for g in fp.gpus if any(_model_matches(g.name, m) for m in req.gpu_models)]
        ok = len(usable) >= need
        found.append(
            MachineCheck(
                check="gpu-model",
                status="pass" if ok else "fail",
                message=f"accepted models {', '.join(req.gpu_models)}: {len(usable)} of {have} "
                f"GPUs match ({_gpu_list(fp.gpus)})",
                fix=None
                if ok
                else "use a recipe made for these GPUs, or add the model to "
                "topology.gpu_models after checking memory and kernels",
            )
        )
    if req.min_gpu_memory_gb is not None:
        big = [g for g in usable if (g.memory_gb or 0) >= req.min_gpu_memory_gb]
        sizes = sorted({f"{g.memory_gb:.0f}" for g in usable if g.memory_gb is not None})
        ok = len(big) >= need
        found.append(
            MachineCheck(
                check="gpu-memory",
                status="pass" if ok else "fail",
                message=f"needs {req.min_gpu_memory_gb:g} GB per GPU; {len(big)} GPUs have it "
                f"(sizes: {', '.join(sizes) or 'unknown'} GB)",
                fix=None if ok else "use GPUs with more memory or a layout that shards further",
            )
        )
    found.append(_interconnect_finding(fp, req))
    found += _arch_findings(fp, req)
    found.append(_nccl_finding(fp, req))
    return found


def _chosen_set(fp: MachineFingerprint, need: int) -> tuple[list[int], InterconnectClass]:
    if fp.topology is None or need >= len(fp.gpus):
        return [g.index for g in fp.gpus], fp.interconnect
    best = best_gpu_set(fp.topology, need)
    if best is None:
        return [g.index for g in fp.gpus][:need], classify(fp.topology, len(fp.gpus))
    return best


def _interconnect_finding(fp: MachineFingerprint, req: Requirements) -> MachineCheck:
    gpus, cls = _chosen_set(fp, req.gpus)
    where = "" if len(gpus) == len(fp.gpus) else f" using GPUs {','.join(map(str, gpus))}"
    message = f"machine: {fp.interconnect.label}; deployment{where}: {cls.label}"
    pin = None if not where else f"give the server GPUs {','.join(map(str, gpus))}"
    if req.interconnect == "nvlink":
        if cls in (InterconnectClass.ALL_NVLINK, InterconnectClass.SINGLE_GPU):
            return MachineCheck(check="interconnect", status="pass", message=message, fix=pin)
        return MachineCheck(
            check="interconnect",
            status="fail",
            message=f"the recipe expects NVLink; {message}",
            fix="run it on an NVLink machine, or use the PCIe variant of the recipe",
        )
    if req.interconnect == "pcie" and cls in (
        InterconnectClass.ALL_NVLINK,
        InterconnectClass.PARTIAL_NVLINK,
    ):
        return MachineCheck(
            check="interconnect",
            status="warn",
            message=f"the recipe was made for PCIe; {message}",
            fix="it runs, but an NVLink recipe variant (e.g. TP8) may be faster here",
        )
    if cls is InterconnectClass.UNKNOWN:
        return MachineCheck(
            check="interconnect",
            status="warn",
            message=message,
            fix="run `nvidia-smi topo -m` by hand",
        )
    return MachineCheck(check="interconnect", status="pass", message=message, fix=pin)


def _arch_findings(fp: MachineFingerprint, req: Requirements) -> list[MachineCheck]:
    if req.image is None:
        return []
    if not req.architectures:
        return [
            MachineCheck(
                check="architectures",
                status="warn",
                message=req.notes[0]
                if req.notes
                else f"image {req.image} lists no GPU architectures",
                fix=f"add gpu_architectures to images/{req.image}.yaml",
            )
        ]
    found: list[MachineCheck] = []
    by_cap: dict[str | None, list[GpuInfo]] = {}
    for gpu in fp.gpus:
        by_cap.setdefault(gpu.compute_cap, []).append(gpu)
    carried = ", ".join(req.architectures)
    for cap, gpus in by_cap.items():
        names = _gpu_list(gpus)
        if cap is None:
            found.append(
                MachineCheck(
                    check="architectures",
                    status="warn",
                    message=f"compute capability of {names} is unknown",
                    fix="upgrade the driver so nvidia-smi reports compute_cap",
                )
            )
        elif cap in req.architectures:
            found.append(
                MachineCheck(
                    check="architectures",
                    status="pass",
                    message=f"image {req.image} carries {sm_name(cap)} for {names}",
                )
            )
        else:
            found.append(
                MachineCheck(
                    check="architectures",
                    status="fail",
                    message=f"image {req.image} has kernels for {carried} but {names} "
                    f"need {cap} ({sm_name(cap)}): the server would fail after loading weights",
                    fix=f'add "{cap}" to gpu_architectures in images/{req.image}.yaml and rebuild',
                )
            )
    return found


def _nccl_finding(fp: MachineFingerprint, req: Requirements) -> MachineCheck:
    _, cls = _chosen_set(fp, req.gpus)
    advice = nccl_advice(cls)
    p2p_set = sorted(k for k in req.env if k.startswith("NCCL_P2P"))
    if cls is InterconnectClass.ALL_NVLINK and "NCCL_P2P_DISABLE" in req.env:
        return MachineCheck(
            check="nccl",
            status="warn",
            message="NCCL_P2P_DISABLE is set on an NVLink machine: traffic that "
            "could use NVLink goes through host memory",
            fix="drop NCCL_P2P_DISABLE from the recipe's env",
        )
    missing = [f"{k}={v}" for k, v in advice.env.items() if not p2p_set]
    missing += [a for a in advice.server_args if a not in req.server_args]
    if not missing:
        return MachineCheck(
            check="nccl",
            status="pass",
            message=f"{cls.label}: "
            + ("recipe sets " + ", ".join(p2p_set) if p2p_set else "no NCCL settings needed"),
        )
    return MachineCheck(
        check="nccl",
        status="warn",
        message=f"{cls.label}: the recipe does not set " + ", ".join(missing),
        fix="add to the recipe: " + ", ".join(missing) + f" ({P2P_FALLBACK})",
    )


def _docker_findings(fp: MachineFingerprint, req: Requirements | None) -> list[MachineCheck]:
    docker = fp.docker
    if not docker.available:
        return [
            MachineCheck(
                check="docker",
                status="fail" if req is not None else "warn",
                message=f"Docker engine not usable: {docker.error}",
                fix="`make docker` installs and starts an engine",
            )
        ]
    found = [
        MachineCheck(
            check="docker",
            status="pass",
            message=f"Docker {docker.server_version} (runtimes: "
            f"{', '.join(docker.runtimes) or 'none'})",
        )
    ]
    kinds = [
        k
        for k, on in (
            ("nvidia runtime", docker.nvidia_runtime),
            ("CDI nvidia.com/gpu", docker.nvidia_cdi),
        )
        if on
    ]
    needs = req.needs_gpus if req is not None else bool(fp.gpus)
    if kinds:
        found.append(
            MachineCheck(
                check="gpu-runtime",
                status="pass",
                message="Docker can give containers GPUs: " + ", ".join(kinds),
            )
        )
    elif needs:
        found.append(
            MachineCheck(
                check="gpu-runtime",
                status="fail" if req is not None else "warn",
                message="Docker has neither the nvidia runtime nor NVIDIA CDI specs",
                fix="install nvidia-container-toolkit, then `sudo nvidia-ctk runtime configure "
                "--runtime=docker` and restart dockerd (or `sudo nvidia-ctk cdi generate "
                "--output=/etc/cdi/nvidia.yaml`)",
            )
        )
    return found


def _disk_finding(fp: MachineFingerprint, req: Requirements | None) -> MachineCheck:
    disk = fp.disk
    where = f"{_gb(disk.free_bytes)} free at {disk.hub_cache}"
    used = 1 - disk.free_bytes / disk.total_bytes if disk.total_bytes else 0.0
    if req is not None and req.weights_bytes is not None:
        cached = disk.cached_bytes.get(req.model_repo or "", 0)
        missing = max(0, req.weights_bytes - cached)
        need = missing * DISK_HEADROOM
        what = f"{where}; the weights need {_gb(req.weights_bytes)}"
        if cached:
            what += f", {_gb(cached)} of them already cached"
        if disk.free_bytes >= need:
            return MachineCheck(check="disk", status="pass", message=what)
        margin = need - missing
        return MachineCheck(
            check="disk",
            status="fail",
            message=f"{what}: {_gb(missing)} to download + {_gb(margin)} margin "
            f"({DISK_HEADROOM - 1:.0%}) = {_gb(need)} needed",
            fix="free space, or point HF_HUB_CACHE at a disk with "
            f"{_gb(need - disk.free_bytes)} more",
        )
    if used > 0.95:
        return MachineCheck(
            check="disk",
            status="warn",
            message=f"{where} ({used:.0%} used)",
            fix="free space before downloading weights",
        )
    unknown = req is not None and req.needs_gpus
    note = "; weights size unknown (set model.weights_gb or lock the recipe)" if unknown else ""
    return MachineCheck(check="disk", status="pass", message=where + note)
