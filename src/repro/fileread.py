"""Reading a file someone else wrote, bounded: size, encoding and nesting depth.

Run records, lock files, run state, prompt files and datasets can be truncated, edited, or
hostile. Every read here ends in the file's content or one `UnreadableFile` line naming the
file and what is wrong with it (too large, not UTF-8 and where, nested too deep, not JSON),
never a `UnicodeDecodeError`, `RecursionError` or `MemoryError` traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from repro.errors import ReproError

MiB = 1024 * 1024
MAX_JSON_BYTES = 64 * MiB  # a JSON document: run.json, summary.json, a lock, context.json
MAX_TEXT_BYTES = 1024 * MiB  # a JSON-lines or data file (per-request rows, prompts)
MAX_DEPTH = 64  # nesting of arrays and objects; records nest about 6 deep


class UnreadableFile(ReproError):
    """A file that cannot be read as what it should be."""


def read_text(path: Path, where: str | None = None, max_bytes: int = MAX_TEXT_BYTES) -> str:
    """`path` as UTF-8 text, at most `max_bytes` long."""
    shown = where or str(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise
    except OSError as err:
        raise UnreadableFile(f"{shown}: cannot read: {err.strerror or err}") from None
    if len(data) > max_bytes:
        raise UnreadableFile(
            f"{shown}: larger than the {max_bytes // MiB} MiB repro reads from such a file",
            hint="is this the right file?",
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UnreadableFile(
            f"{shown}: not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})",
            hint="save it as UTF-8, or restore the file repro wrote",
        ) from None


def parse_json(text: str, where: str, max_depth: int = MAX_DEPTH) -> Any:
    """`text` as JSON, refusing documents nested deeper than `max_depth`."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise UnreadableFile(
            f"{where}: corrupt JSON at line {err.lineno} column {err.colno}: {err.msg}",
            hint="the file was cut short or edited; restore it or write it again",
        ) from None
    except RecursionError:
        raise UnreadableFile(f"{where}: nested deeper than {max_depth} levels") from None
    if depth_of(value, max_depth) > max_depth:
        raise UnreadableFile(f"{where}: nested deeper than {max_depth} levels")
    return value


def read_json(path: Path, where: str | None = None, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """`path` as a JSON document, bounded in size, encoding and depth."""
    shown = where or str(path)
    return parse_json(read_text(path, shown, max_bytes), shown)


def depth_of(value: Any, stop: int) -> int:
    """How deep arrays and objects nest in `value` (without recursion; stops past `stop`)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            depth += 1
            deepest = max(deepest, depth)
            if deepest > stop:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth) for child in children)
    return deepest
