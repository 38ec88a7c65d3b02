"""GPU model names -> CUDA compute capability (the architecture an image must carry kernels for),
and the spellings of an architecture.

The facts are repro.recipe.hardware's GPU table; the doctor stage reads them when `nvidia-smi`
cannot report `compute_cap` (old drivers) and to name architectures in messages.
"""

from __future__ import annotations

from repro.recipe.hardware import gpu_model


def arch_for_name(name: str) -> str | None:
    """Compute capability ("12.0") for a GPU model name, or None when the table lacks it."""
    model = gpu_model(name)
    return model.arch if model is not None else None


def sm_name(arch: str) -> str:
    """ "12.0" -> "sm_120", the spelling CUDA and kernel builds use."""
    return "sm_" + arch.replace(".", "")


def normalize_arch(value: str | float | int) -> str:
    """Accept "12.0", "12", 12.0, "sm_120", "120", "10.3a" and return "12.0"-style text."""
    text = str(value).strip().lower().removeprefix("sm_").removeprefix("sm").rstrip("af")
    if "." in text:
        major, minor = text.split(".", 1)
        return f"{int(major)}.{int(minor or 0)}"
    if len(text) >= 2 and text.isdigit() and int(text) >= 20:
        return f"{int(text[:-1])}.{int(text[-1])}"
    return f"{int(text)}.0"
