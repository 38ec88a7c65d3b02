"""The fingerprint collector run against fixture captures through a real nvidia-smi script."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.doctor import (
    InterconnectClass,
    MachineFingerprint,
    best_gpu_set,
    classify,
    collect_fingerprint,
)

C = InterconnectClass


@pytest.mark.parametrize(
    ("tag", "gpus", "cls"),
    [
        ("rtxpro6000x8", 8, C.PCIE_CROSS_NUMA),
        ("rtxpro6000x4", 4, C.PCIE_SINGLE_NUMA),
        ("b200x8", 8, C.ALL_NVLINK),
        ("h100nvlx4", 4, C.PARTIAL_NVLINK),
        ("h200x1", 1, C.SINGLE_GPU),
        ("a100x4_r470", 4, C.ALL_NVLINK),
    ],
)
def test_interconnect_class_of_each_machine(fake_nvidia_smi, tag: str, gpus: int, cls) -> None:
    fake_nvidia_smi(tag)
    fp = collect_fingerprint()
    assert len(fp.gpus) == gpus
    assert fp.interconnect is cls
    assert fp.topology is not None and fp.topology.gpu_indices == list(range(gpus))


def test_no_nvidia_smi_is_class_none_and_says_so(gpu_less: Path) -> None:
    fp = collect_fingerprint()
    assert fp.nvidia_smi is None
    assert fp.gpus == [] and fp.topology is None
    assert fp.interconnect is C.NONE
    assert "nvidia-smi not found" in fp.problems[0]
    assert fp.disk.hub_cache == str(gpu_less.parent / "hub")
    assert fp.disk.free_bytes > 0


def test_unreadable_topology_is_class_unknown(fake_nvidia_smi) -> None:
    fake_nvidia_smi("rtxpro6000x8", topo_ok=False)
    fp = collect_fingerprint()
    assert len(fp.gpus) == 8
    assert fp.interconnect is C.UNKNOWN
    assert any("Driver/library version mismatch" in p for p in fp.problems)


def test_old_driver_falls_back_to_a_query_without_compute_cap(fake_nvidia_smi) -> None:
    log = fake_nvidia_smi("a100x4_r470")
    fp = collect_fingerprint()
    queries = [line for line in log.read_text().splitlines() if line.startswith("--query-gpu")]
    assert len(queries) == 2
    assert "compute_cap" in queries[0] and "compute_cap" not in queries[1]
    assert {g.compute_cap for g in fp.gpus} == {"8.0"}
    assert {g.compute_cap_source for g in fp.gpus} == {"name-table"}
    assert any("does not report compute_cap" in p for p in fp.problems)
    assert (fp.driver_version, fp.cuda_version) == ("470.82.01", "11.4")


def test_fingerprint_records_versions_affinity_and_round_trips(fake_nvidia_smi) -> None:
    fake_nvidia_smi("b200x8")
    fp = collect_fingerprint()
    assert (fp.driver_version, fp.cuda_version) == ("570.124.06", "12.8")
    assert fp.gpu_models == ["NVIDIA B200"]
    assert fp.architectures == ["10.0"]
    assert fp.topology is not None
    assert fp.topology.affinity["GPU7"].cpu_affinity == "56-111,168-223"
    assert fp.hostname and fp.kernel and fp.cpu_count >= 1
    again = MachineFingerprint.model_validate_json(fp.model_dump_json())
    assert again == fp


def test_best_gpu_set_prefers_nvlink_then_one_numa_node(fake_nvidia_smi) -> None:
    fake_nvidia_smi("rtxpro6000x8")
    topo = collect_fingerprint().topology
    assert topo is not None
    assert best_gpu_set(topo, 4) == ([0, 1, 2, 3], C.PCIE_SINGLE_NUMA)
    assert best_gpu_set(topo, 8) == (list(range(8)), C.PCIE_CROSS_NUMA)
    assert best_gpu_set(topo, 9) is None
    assert classify(topo, 8, [2, 5]) is C.PCIE_CROSS_NUMA

    fake_nvidia_smi("h100nvlx4")
    topo = collect_fingerprint().topology
    assert topo is not None
    assert best_gpu_set(topo, 2) == ([0, 1], C.ALL_NVLINK)
    assert classify(topo, 4, [1, 2]) is C.PCIE_CROSS_NUMA
    assert classify(topo, 4, [0, 1, 2]) is C.PARTIAL_NVLINK
