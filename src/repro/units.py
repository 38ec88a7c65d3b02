"""Byte sizes and durations as people read and write them (no stage, no heavy import:
every stage prints sizes, and the CLI parses them)."""

from __future__ import annotations

GiB = 1 << 30


def human_bytes(n: int | float) -> str:
    """1536 -> '1.5 KiB' (binary units)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def parse_bytes(text: str) -> int:
    """'1GiB', '500MB', '0', '2.5G' -> bytes (binary units for GiB/G, decimal for GB)."""
    units = {
        "": 1, "b": 1,
        "k": 1 << 10, "kib": 1 << 10, "kb": 10**3,
        "m": 1 << 20, "mib": 1 << 20, "mb": 10**6,
        "g": GiB, "gib": GiB, "gb": 10**9,
        "t": 1 << 40, "tib": 1 << 40, "tb": 10**12,
    }  # fmt: skip
    raw = text.strip().lower().replace(" ", "")
    number = raw.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = raw[len(number) :]
    if unit not in units or not number:
        raise ValueError(f"not a size: {text!r} (e.g. 1GiB, 500MB, 0)")
    return int(float(number) * units[unit])


def human_seconds(seconds: float) -> str:
    """4583 -> '1h16m', 754 -> '12m34s', 42.4 -> '42s'."""
    total = max(0, round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"
