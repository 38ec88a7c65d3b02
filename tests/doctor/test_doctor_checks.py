"""Requirements against fingerprints of fixture machines: what a user would see fail or pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.doctor import (
    DockerInfo,
    InterconnectClass,
    MachineFingerprint,
    Requirements,
    collect_fingerprint,
    diagnose,
    nccl_advice,
)

GPU_DOCKER = DockerInfo(
    available=True, server_version="28.1.1", runtimes=["nvidia", "runc"], nvidia_runtime=True
)


def machine(fake_nvidia_smi, tag: str, docker: DockerInfo = GPU_DOCKER) -> MachineFingerprint:
    """Fingerprint of fixture machine `tag`, with a Docker engine that has the nvidia runtime."""
    fake_nvidia_smi(tag)
    return collect_fingerprint().model_copy(update={"docker": docker})


def by_check(report, check: str):
    found = [f for f in report.findings if f.check == check]
    assert found, f"no {check} finding in {report.findings}"
    return found


KIMI_EP4_PCIE = Requirements(
    source="kimi26-ep4",
    gpus=8,
    gpu_models=["RTX PRO 6000"],
    min_gpu_memory_gb=96,
    interconnect="pcie",
    image="sglang-dflash",
    architectures=["9.0", "10.0", "10.3", "12.0"],
    env={"NCCL_P2P_LEVEL": "PHB"},
    server_args=["--disable-custom-all-reduce"],
)


def test_pcie_recipe_passes_on_the_rtx_pro_6000_box(fake_nvidia_smi) -> None:
    report = diagnose(machine(fake_nvidia_smi, "rtxpro6000x8"), KIMI_EP4_PCIE)
    assert report.ok, [f for f in report.findings if f.status != "pass"]
    assert {f.status for f in report.findings} == {"pass"}
    (arch,) = by_check(report, "architectures")
    assert "sm_120" in arch.message
    assert report.nccl.env == {"NCCL_P2P_LEVEL": "PHB"}


def test_image_without_the_gpus_architecture_fails(fake_nvidia_smi) -> None:
    req = KIMI_EP4_PCIE.model_copy(update={"architectures": ["9.0", "10.0"]})
    report = diagnose(machine(fake_nvidia_smi, "rtxpro6000x8"), req)
    assert not report.ok
    (arch,) = by_check(report, "architectures")
    assert arch.status == "fail"
    assert "12.0 (sm_120)" in arch.message and "9.0, 10.0" in arch.message
    assert arch.fix is not None
    assert 'add "12.0"' in arch.fix and "images/sglang-dflash.yaml" in arch.fix


def test_old_driver_arch_from_name_table_is_still_checked(fake_nvidia_smi) -> None:
    req = Requirements(gpus=4, image="sglang-dflash", architectures=["9.0", "10.0", "10.3", "12.0"])
    report = diagnose(machine(fake_nvidia_smi, "a100x4_r470"), req)
    (arch,) = by_check(report, "architectures")
    assert arch.status == "fail" and "sm_80" in arch.message


def test_wrong_model_too_little_memory_and_too_few_gpus(fake_nvidia_smi) -> None:
    rtx = machine(fake_nvidia_smi, "rtxpro6000x8")
    report = diagnose(rtx, Requirements(gpus=8, gpu_models=["B200", "B300"], min_gpu_memory_gb=96))
    assert [f.status for f in by_check(report, "gpu-model")] == ["fail"]
    assert "0 of 8 GPUs match" in by_check(report, "gpu-model")[0].message
    report = diagnose(rtx, Requirements(gpus=8, min_gpu_memory_gb=141))
    (memory,) = by_check(report, "gpu-memory")
    assert memory.status == "fail" and "103" in memory.message  # 97887 MiB = 102.6 GB
    report = diagnose(rtx, Requirements(gpus=16))
    (count,) = by_check(report, "gpus")
    assert count.status == "fail" and "16 GPUs" in count.message
    assert report.ok is False


def test_nvlink_recipe_on_pcie_box_fails_pcie_recipe_on_nvlink_warns(fake_nvidia_smi) -> None:
    rtx = machine(fake_nvidia_smi, "rtxpro6000x8")
    report = diagnose(rtx, Requirements(gpus=8, interconnect="nvlink"))
    (link,) = by_check(report, "interconnect")
    assert link.status == "fail" and "expects NVLink" in link.message
    report = diagnose(machine(fake_nvidia_smi, "b200x8"), Requirements(gpus=8, interconnect="pcie"))
    (link,) = by_check(report, "interconnect")
    assert link.status == "warn" and report.ok


def test_partial_nvlink_box_picks_an_nvlinked_pair(fake_nvidia_smi) -> None:
    h100 = machine(fake_nvidia_smi, "h100nvlx4")
    report = diagnose(h100, Requirements(gpus=2, interconnect="nvlink"))
    (link,) = by_check(report, "interconnect")
    assert link.status == "pass"
    assert link.fix == "give the server GPUs 0,1"
    report = diagnose(h100, Requirements(gpus=4, interconnect="nvlink"))
    assert by_check(report, "interconnect")[0].status == "fail"


def test_pcie_box_without_nccl_settings_gets_suggestions(fake_nvidia_smi) -> None:
    req = KIMI_EP4_PCIE.model_copy(update={"env": {}, "server_args": []})
    report = diagnose(machine(fake_nvidia_smi, "rtxpro6000x8"), req)
    (nccl,) = by_check(report, "nccl")
    assert nccl.status == "warn"
    assert "NCCL_P2P_LEVEL=PHB" in nccl.message and "--disable-custom-all-reduce" in nccl.message
    assert nccl.fix is not None and "NCCL_P2P_DISABLE=1" in nccl.fix
    assert report.ok  # a suggestion, not a failure


def test_nvlink_box_needs_no_nccl_settings_and_flags_p2p_disable(fake_nvidia_smi) -> None:
    b200 = machine(fake_nvidia_smi, "b200x8")
    (nccl,) = by_check(diagnose(b200, Requirements(gpus=8, interconnect="nvlink")), "nccl")
    assert nccl.status == "pass" and "no NCCL settings needed" in nccl.message
    req = Requirements(gpus=8, env={"NCCL_P2P_DISABLE": "1"})
    (nccl,) = by_check(diagnose(b200, req), "nccl")
    assert nccl.status == "warn" and "NCCL_P2P_DISABLE" in nccl.message


NO_CAR = ["--disable-custom-all-reduce"]
PHB = {"NCCL_P2P_LEVEL": "PHB"}


@pytest.mark.parametrize(
    ("cls", "env", "args"),
    [
        (InterconnectClass.ALL_NVLINK, {}, []),
        (InterconnectClass.PARTIAL_NVLINK, {}, NO_CAR),
        (InterconnectClass.PCIE_SINGLE_NUMA, PHB, NO_CAR),
        (InterconnectClass.PCIE_CROSS_NUMA, PHB, NO_CAR),
        (InterconnectClass.SINGLE_GPU, {}, []),
        (InterconnectClass.NONE, {}, []),
    ],
)
def test_nccl_advice_per_class(cls: InterconnectClass, env: dict, args: list) -> None:
    advice = nccl_advice(cls)
    assert (advice.env, advice.server_args) == (env, args)


def test_docker_without_gpu_runtime_fails_with_the_toolkit_fix(fake_nvidia_smi) -> None:
    plain = DockerInfo(available=True, server_version="28.1.1", runtimes=["runc"])
    report = diagnose(machine(fake_nvidia_smi, "b200x8", docker=plain), Requirements(gpus=8))
    (runtime,) = by_check(report, "gpu-runtime")
    assert runtime.status == "fail" and runtime.fix is not None and "nvidia-ctk" in runtime.fix
    cdi = plain.model_copy(update={"nvidia_cdi": True, "cdi_spec_dirs": ["/etc/cdi"]})
    report = diagnose(machine(fake_nvidia_smi, "b200x8", docker=cdi), Requirements(gpus=8))
    assert by_check(report, "gpu-runtime")[0].status == "pass"
    absent = DockerInfo(error="docker CLI not found on PATH")
    report = diagnose(machine(fake_nvidia_smi, "b200x8", docker=absent), Requirements(gpus=8))
    (engine,) = by_check(report, "docker")
    assert engine.status == "fail" and engine.fix is not None and "make docker" in engine.fix


def test_disk_for_the_weights(fake_nvidia_smi, tmp_path: Path) -> None:
    fp = machine(fake_nvidia_smi, "b200x8")
    assert fp.disk.hub_cache == str(tmp_path / "hub")
    report = diagnose(fp, Requirements(gpus=8, weights_bytes=fp.disk.free_bytes * 2))
    (disk,) = by_check(report, "disk")
    assert disk.status == "fail" and "HF_HUB_CACHE" in (disk.fix or "")
    assert "margin (5%)" in disk.message  # the shortfall counts it: say so
    report = diagnose(fp, Requirements(gpus=8, weights_bytes=1_000_000))
    assert by_check(report, "disk")[0].status == "pass"


def test_no_gpus_with_a_gpu_recipe_points_to_the_simulator(gpu_less: Path) -> None:
    report = diagnose(collect_fingerprint(), KIMI_EP4_PCIE)
    (gpus,) = by_check(report, "gpus")
    assert gpus.status == "fail"
    assert "needs 8 GPUs" in gpus.message and "make demo" in (gpus.fix or "")
    (smi,) = by_check(report, "nvidia-smi")
    assert smi.status == "warn" and "not found" in smi.message
    assert not report.ok


def test_cpu_only_recipe_passes_without_gpus(gpu_less: Path) -> None:
    fp = collect_fingerprint().model_copy(update={"docker": GPU_DOCKER})
    report = diagnose(fp, Requirements(gpus=0, gpu_runtime="none"))
    assert report.ok
    assert by_check(report, "gpus")[0].status == "pass"


def test_weights_already_in_the_hub_cache_need_no_new_space(fake_nvidia_smi, tmp_path) -> None:
    fake_nvidia_smi("b200x8")
    blobs = tmp_path / "hub" / "models--org--model" / "blobs"
    blobs.mkdir(parents=True)
    (blobs / "a").write_bytes(b"\0" * 3000)
    (blobs / "b.incomplete").write_bytes(b"\0" * 1000)
    fp = collect_fingerprint(repos=["org/model", "org/other"])
    assert fp.disk.cached_bytes == {"org/model": 4000, "org/other": 0}
    free = fp.disk.free_bytes
    # Too big for the free space with headroom, unless the cached 4000 bytes count.
    weights = int(free / 1.05) + 4000
    req = Requirements(gpus=8, model_repo="org/model", weights_bytes=weights)
    (disk,) = by_check(diagnose(fp, req), "disk")
    assert disk.status == "pass" and "already cached" in disk.message
    req = req.model_copy(update={"model_repo": "org/other"})
    assert by_check(diagnose(fp, req), "disk")[0].status == "fail"
