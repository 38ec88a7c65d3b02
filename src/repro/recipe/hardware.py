"""What repro knows about GPUs and model sizes: the one GPU table.

Each GPU model's CUDA compute capability (the architecture an image must carry kernels for:
RTX PRO 6000 = sm_120, B200 = sm_100, B300 = sm_103, H100/H200 = sm_90; the rest are NVIDIA's
published compute capabilities) and, for the GPUs the recipes run on, the usable HBM per GPU
in GB as vendors state it for their 8-GPU systems: RTX PRO 6000 Blackwell 96 GB; B200 180 GB
(DGX B200: 1,440 GB for 8 GPUs); B300 288 GB (HGX/DGX B300: 288 GB HBM3e per GPU); H200
141 GB; H100 80 GB. The recipe rules read both; the doctor stage reads the architecture when
nvidia-smi cannot report `compute_cap` (repro.doctor.arch). Names match whole words of what
nvidia-smi prints, longest first, so "NVIDIA RTX PRO 6000 Blackwell Server Edition" is an
RTX PRO 6000 and "A100" is not read as "A10".
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class GpuModel:
    name: str
    arch: str  # CUDA compute capability, "12.0"
    memory_gb: float | None = None  # None: no one size (several variants) or not needed


GPU_MODELS: dict[str, GpuModel] = {
    g.name: g
    for g in (
        GpuModel("RTX PRO 6000", "12.0", 96),
        GpuModel("RTX PRO 6000D", "12.0"),
        GpuModel("RTX 5090", "12.0"),
        GpuModel("GB300", "10.3"),
        GpuModel("B300", "10.3", 288),
        GpuModel("GB200", "10.0"),
        GpuModel("B200", "10.0", 180),
        GpuModel("GH200", "9.0"),
        GpuModel("H200", "9.0", 141),
        GpuModel("H100", "9.0", 80),
        GpuModel("H800", "9.0"),
        GpuModel("H20", "9.0"),
        GpuModel("RTX 6000 Ada", "8.9"),
        GpuModel("L40S", "8.9"),
        GpuModel("L40", "8.9"),
        GpuModel("L4", "8.9"),
        GpuModel("A100", "8.0"),
        GpuModel("A800", "8.0"),
        GpuModel("A10", "8.6"),
        GpuModel("A40", "8.6"),
    )
}

_ORDERED = sorted(GPU_MODELS.values(), key=lambda g: len(g.name), reverse=True)

# Approximate on-disk weight sizes (GB) of the models and drafters the shipped recipes serve,
# used when a recipe gives no `model.weights_gb` (`drafter.weights_gb`); the lock records the
# exact byte count. Kimi K2.6 (INT4 MoE, 1T parameters) is 555-610 GB on disk (DESIGN.md). The
# drafters, bf16, from their architectures: Qwen3.6-27B's DFlash drafter is 5 Qwen3 layers at
# hidden size 5120 (about 1.75B parameters, as the 3.57 GB of other 5-layer drafters of 27B
# Qwen targets); Kimi's DFlash drafters 6 layers at 7168 (z-lab's K2.5 one: 13.9 GB in
# float32); the EAGLE3 MLA drafter one MLA layer with its own embedding and fc (about 2B).
MODEL_WEIGHTS_GB: dict[str, float] = {
    "moonshotai/Kimi-K2.6": 595,
    "z-lab/Qwen3.6-27B-DFlash": 3.5,
    "z-lab/Kimi-K2.6-DFlash": 7.0,
    "SubSir/Kimi-K2.6-DFlash-tmp-long": 7.0,
    "lightseekorg/kimi-k2.6-eagle3.1-mla": 4.0,
}


def weights_gb(repo: str, declared: float | None) -> float | None:
    """The approximate size of `repo`'s weights: as a recipe declares it, else the known
    size of a shipped model or drafter, else None (unknown)."""
    return declared or MODEL_WEIGHTS_GB.get(repo)


# Model families SGLang 0.5.23 configures itself, told by repository name (a recipe has no
# config.json before its lock). The DeepSeek family of srt/arg_groups/model_overrides/
# deepseek_v2.py (`_deepseek_family_overrides`; Kimi K2.5/K2.6 are KimiK25ForConditionalGeneration)
# gets attention_backend trtllm_mla on sm_100 when no attention backend is set. The Qwen3.5
# family of model_overrides/qwen3_5.py (Qwen3.5, Qwen3.6, Qwen3-Next: hybrid gated-delta-net
# attention) gets trtllm_mha with page_size 64 (or triton, page_size 1) on sm_100 when none is
# set, and srt/layers/attention/attention_registry.py limits its backends on Blackwell.
DEEPSEEK_FAMILY = re.compile(r"(?:^|/)(?:kimi-k2|deepseek-(?:v3|r1))", re.I)
QWEN35_FAMILY = re.compile(r"(?:^|/)qwen3(?:\.[56]|-next)", re.I)
# attention_registry.py: the attention backends hybrid GDN models start with on Blackwell, by
# compute capability major (sm_120; sm_100 adds fa4: HYBRID_GDN_SM100_BACKENDS)
HYBRID_GDN_BACKENDS = {
    "12": ("triton", "trtllm_mha", "flashinfer"),
    "10": ("triton", "trtllm_mha", "fa4", "flashinfer"),
}


def arch_major(model: GpuModel) -> str:
    """ "10" for sm_100/sm_103 (B200, B300: SGLang's `is_sm100`), "12" for sm_120."""
    return model.arch.split(".")[0]


def gpu_model(name: str) -> GpuModel | None:
    """The known GPU model `name` refers to ("NVIDIA B200" -> B200), or None."""
    for model in _ORDERED:
        if re.search(rf"(?<![A-Za-z0-9]){re.escape(model.name)}(?![A-Za-z0-9])", name, re.I):
            return model
    return None
