"""A safetensors file read without torch: its header (8-byte length, then JSON) and bytes."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any


def _split(path: Path) -> tuple[dict[str, Any], bytes]:
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    header.pop("__metadata__", None)
    return header, data[8 + size :]


def shapes(path: Path) -> dict[str, list[int]]:
    """Tensor name -> shape."""
    return {name: meta["shape"] for name, meta in _split(path)[0].items()}


def tensor_bytes(path: Path) -> dict[str, bytes]:
    """Tensor name -> its raw bytes."""
    header, body = _split(path)
    return {name: body[m["data_offsets"][0] : m["data_offsets"][1]] for name, m in header.items()}
