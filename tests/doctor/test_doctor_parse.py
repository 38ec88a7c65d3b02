"""Parsing what nvidia-smi prints: real H200 captures and hand-written multi-GPU ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.doctor import NvidiaSmiParseError, parse_banner, parse_query_gpu, parse_topo
from repro.doctor.arch import arch_for_name, normalize_arch, sm_name

GPU_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "gpu"


def read(name: str) -> str:
    return (GPU_FIXTURES / name).read_text()


def test_real_h200_topo_strips_ansi_and_reads_affinity_past_the_empty_cell() -> None:
    topo = parse_topo(read("topo_m_h200x1.txt"))
    assert topo.devices == ["GPU0"]
    assert topo.matrix == {"GPU0": {"GPU0": "X"}}
    aff = topo.affinity["GPU0"]
    assert (aff.cpu_affinity, aff.numa_affinity, aff.gpu_numa_id) == ("0-15", "0", None)
    assert topo.nics == {}


def test_real_h200_query_ignores_the_extra_trailing_column() -> None:
    (gpu,) = parse_query_gpu(read("query_gpu_h200x1.csv"))
    assert gpu.name == "NVIDIA H200"
    assert gpu.memory_total_mib == 143771
    assert gpu.pci_bus_id == "00000000:00:06.0"
    assert (gpu.compute_cap, gpu.compute_cap_source) == ("9.0", "nvidia-smi")
    assert parse_banner(read("nvidia_smi_h200x1.txt")) == ("580.159.04", "13.0")


def test_b200_nic_columns_run_together_header_and_nic_legend() -> None:
    topo = parse_topo(read("topo_m_b200x8.txt"))
    gpus = [f"GPU{i}" for i in range(8)]
    nics = [f"NIC{i}" for i in range(12)]
    assert topo.devices == gpus + nics  # "NIC10NIC11" split into two columns
    assert topo.gpu_indices == list(range(8))
    assert all(topo.link(a, b) == "NV18" for a in range(8) for b in range(8) if a != b)
    assert topo.nvlinks(0, 7) == 18
    assert topo.matrix["GPU0"]["NIC0"] == "PIX"
    assert topo.matrix["GPU4"]["NIC0"] == "SYS"
    assert topo.matrix["NIC11"]["NIC10"] == "NODE"
    assert topo.matrix["NIC11"]["NIC11"] == "X"
    assert set(topo.affinity) == set(gpus)  # NIC rows carry no affinity
    assert topo.affinity["GPU4"].cpu_affinity == "56-111,168-223"
    assert topo.numa_node(4) == "1"
    assert topo.nics == {f"NIC{i}": f"mlx5_{i}" for i in range(12)}


def test_run_together_cells_and_old_soc_spelling() -> None:
    text = (
        "\t\x1b[4mGPU0\tGPU1\tGPU2\tNIC0NIC1\tCPU Affinity\tNUMA Affinity\x1b[0m\n"
        "GPU0\t X \tPIX  NODE\tSYSSYS\t0-7\t0\n"
        "GPU1\tPIX\t X \tSOC\tNODE\tSYS\t0-7\t0\n"
        "GPU2\tNODE\tSOC\t X \tSYS\tPIX\t8-15\t1\n"
        "NIC0\tSYS\tNODE\tSYS\t X \tSYS\n"
        "NIC1\tSYS\tSYS\tPIX\tSYS\t X \n"
        "\nLegend:\n\n  X    = Self\n\nNIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_bond_0\n"
    )
    topo = parse_topo(text)
    assert topo.matrix["GPU0"] == {
        "GPU0": "X",
        "GPU1": "PIX",
        "GPU2": "NODE",
        "NIC0": "SYS",
        "NIC1": "SYS",
    }
    assert topo.link(1, 2) == "SYS"  # SOC is the pre-375 name of SYS
    assert topo.affinity["GPU2"].numa_affinity == "1"
    assert topo.affinity["GPU2"].gpu_numa_id is None
    assert topo.nics["NIC1"] == "mlx5_bond_0"


def test_rtx_pro_6000_query_and_topology() -> None:
    gpus = parse_query_gpu(read("query_gpu_rtxpro6000x8.csv"))
    assert [g.index for g in gpus] == list(range(8))
    assert {g.name for g in gpus} == {"NVIDIA RTX PRO 6000 Blackwell Server Edition"}
    assert {g.memory_total_mib for g in gpus} == {97887}
    assert {g.compute_cap for g in gpus} == {"12.0"}
    topo = parse_topo(read("topo_m_rtxpro6000x8.txt"))
    assert topo.link(0, 3) == "NODE"
    assert topo.link(3, 4) == "SYS"
    assert [topo.numa_node(i) for i in range(8)] == ["0"] * 4 + ["1"] * 4


def test_old_driver_query_without_compute_cap_uses_the_name_table() -> None:
    gpus = parse_query_gpu(read("query_gpu_a100x4_r470.csv"), with_compute_cap=False)
    assert len(gpus) == 4
    assert {(g.compute_cap, g.compute_cap_source) for g in gpus} == {("8.0", "name-table")}
    topo = parse_topo(read("topo_m_a100x4_r470.txt"))  # no "GPU NUMA ID" column
    assert topo.affinity["GPU2"].numa_affinity == "1"
    assert topo.affinity["GPU2"].gpu_numa_id is None


@pytest.mark.parametrize(
    ("name", "arch"),
    [
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0"),
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "12.0"),
        ("NVIDIA B200", "10.0"),
        ("NVIDIA B300 SXM6 AC", "10.3"),
        ("NVIDIA H100 80GB HBM3", "9.0"),
        ("NVIDIA H200", "9.0"),
        ("NVIDIA A100-SXM4-80GB", "8.0"),  # not read as A10
        ("NVIDIA A10", "8.6"),
        ("Tesla T4", None),
    ],
)
def test_architecture_table(name: str, arch: str | None) -> None:
    assert arch_for_name(name) == arch


def test_architecture_spellings() -> None:
    assert [normalize_arch(v) for v in ("12.0", "12", 12.0, "sm_120", "120", "10.3a", "90")] == [
        "12.0",
        "12.0",
        "12.0",
        "12.0",
        "12.0",
        "10.3",
        "9.0",
    ]
    assert sm_name("10.3") == "sm_103"


def test_unparseable_output_is_a_clear_error() -> None:
    with pytest.raises(NvidiaSmiParseError, match="no device header"):
        parse_topo("NVIDIA-SMI has failed because it couldn't communicate with the driver.\n")
    with pytest.raises(NvidiaSmiParseError, match="expected 7"):
        parse_query_gpu("No devices were found\n")
    with pytest.raises(NvidiaSmiParseError, match="unknown cell 'BOGUS'"):
        parse_topo("\tGPU0\tGPU1\n GPU0\t X \tBOGUS\n".replace(" GPU0", "GPU0"))
