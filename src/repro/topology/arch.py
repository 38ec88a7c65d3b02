"""GPU model names -> CUDA compute capability (the architecture an image must carry kernels for).

Used when `nvidia-smi` cannot report `compute_cap` (old drivers) and to name architectures in
messages. Keys match whole words of the name nvidia-smi prints ("NVIDIA B200", "NVIDIA RTX PRO
6000 Blackwell Server Edition"); the longest key wins, so "A100" is not read as "A10".
"""

from __future__ import annotations

import re

# From DESIGN.md "GPUs and topology": RTX PRO 6000 = sm_120, B200 = sm_100, B300 = sm_103,
# H100/H200 = sm_90; the rest are NVIDIA's published compute capabilities.
_ARCH_BY_NAME: dict[str, str] = {
    "RTX PRO 6000": "12.0",
    "RTX PRO 6000D": "12.0",
    "RTX 5090": "12.0",
    "GB300": "10.3",
    "B300": "10.3",
    "GB200": "10.0",
    "B200": "10.0",
    "GH200": "9.0",
    "H200": "9.0",
    "H100": "9.0",
    "H800": "9.0",
    "H20": "9.0",
    "RTX 6000 Ada": "8.9",
    "L40S": "8.9",
    "L40": "8.9",
    "L4": "8.9",
    "A100": "8.0",
    "A800": "8.0",
    "A10": "8.6",
    "A40": "8.6",
}

_ORDERED = sorted(_ARCH_BY_NAME.items(), key=lambda item: len(item[0]), reverse=True)


def arch_for_name(name: str) -> str | None:
    """Compute capability ("12.0") for a GPU model name, or None when the table lacks it."""
    for key, arch in _ORDERED:
        if re.search(rf"(?<![A-Za-z0-9]){re.escape(key)}(?![A-Za-z0-9])", name, re.IGNORECASE):
            return arch
    return None


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
