"""Interconnect class of a machine or of a GPU set, and the best GPU set for a deployment."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

from repro.doctor.models import InterconnectClass, TopoMatrix

# Above this many candidate sets, `best_gpu_set` stops searching and takes the first GPUs.
_MAX_COMBINATIONS = 20_000


def classify(
    topology: TopoMatrix | None, gpu_count: int, gpus: Sequence[int] | None = None
) -> InterconnectClass:
    """Class of `gpus` (default: every GPU in the matrix) given `gpu_count` GPUs on the machine.

    all-nvlink: every pair NV#; partial-nvlink: some pairs NV#; otherwise PCIe, across NUMA
    when any pair is SYS or the GPUs report different NUMA affinity.
    """
    if gpu_count == 0:
        return InterconnectClass.NONE
    chosen = list(gpus) if gpus is not None else (topology.gpu_indices if topology else [])
    if gpu_count == 1 or len(chosen) == 1:
        return InterconnectClass.SINGLE_GPU
    if topology is None:
        return InterconnectClass.UNKNOWN
    pairs = list(combinations(chosen, 2))
    nvlinked = sum(1 for a, b in pairs if topology.nvlinks(a, b) > 0)
    if nvlinked == len(pairs):
        return InterconnectClass.ALL_NVLINK
    if nvlinked:
        return InterconnectClass.PARTIAL_NVLINK
    numa_nodes = {topology.numa_node(g) for g in chosen} - {None}
    if len(numa_nodes) > 1 or any(topology.link(a, b) == "SYS" for a, b in pairs):
        return InterconnectClass.PCIE_CROSS_NUMA
    return InterconnectClass.PCIE_SINGLE_NUMA


_PREFERENCE = [
    InterconnectClass.ALL_NVLINK,
    InterconnectClass.SINGLE_GPU,
    InterconnectClass.PARTIAL_NVLINK,
    InterconnectClass.PCIE_SINGLE_NUMA,
    InterconnectClass.PCIE_CROSS_NUMA,
]


def best_gpu_set(topology: TopoMatrix, size: int) -> tuple[list[int], InterconnectClass] | None:
    """The `size` GPUs with the best interconnect (NVLink clique, else one NUMA node).

    None when the matrix has fewer than `size` GPUs. Ties go to the lowest GPU indices.
    """
    indices = topology.gpu_indices
    if size <= 0 or len(indices) < size:
        return None
    best: tuple[list[int], InterconnectClass] | None = None
    for count, combo in enumerate(combinations(indices, size)):
        if count >= _MAX_COMBINATIONS:
            break
        cls = classify(topology, len(indices), combo)
        if best is None or _PREFERENCE.index(cls) < _PREFERENCE.index(best[1]):
            best = (list(combo), cls)
            if cls in (InterconnectClass.ALL_NVLINK, InterconnectClass.SINGLE_GPU):
                break
    return best
