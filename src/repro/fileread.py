"""Reading a file someone else wrote, bounded: size, encoding and nesting depth.

Run records, lock files, run state, prompt files and datasets can be truncated, edited, or
hostile. Every read here ends in the file's content or one `UnreadableFile` line naming the
file and what is wrong with it (not a regular file, too large, not UTF-8 and where, nested
too deep, not JSON, a key given twice), never a `UnicodeDecodeError`, `RecursionError` or
`MemoryError` traceback, and never a hang: a FIFO or device is refused without reading it,
and the size is checked before the first byte is read (a sparse 3 GB file costs nothing).
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from repro.errors import ReproError

MiB = 1024 * 1024
MAX_JSON_BYTES = 64 * MiB  # a JSON document: run.json, summary.json, a lock, context.json
MAX_TEXT_BYTES = 1024 * MiB  # a JSON-lines or data file (per-request rows, prompts)
MAX_LINE_BYTES = 16 * MiB  # one line of a file read line by line (a trace's request)
MAX_DEPTH = 64  # nesting of arrays and objects; records nest about 6 deep


class UnreadableFile(ReproError):
    """A file that cannot be read as what it should be."""


def within(path: Path, root: Path) -> bool:
    """Whether `path`, its symlinks followed, stays inside the folder `root`: a link (or
    `..`) that leads out is how a hostile file reads or writes elsewhere."""
    return path.resolve().is_relative_to(root.resolve())


def named_file(path: Path, where: str | None = None) -> Path:
    """`path`, refused when it is a link (or lies in a linked folder) that leads out of both
    the current folder (the project) and its own folder: a file the user names is read, not
    the file elsewhere on the machine a link in its place would have repro read and quote."""
    if within(path, Path.cwd()) or within(path, path.absolute().parent):
        return path
    raise UnreadableFile(
        f"{where or path}: a link to a file outside the project and its own folder",
        hint="name the file itself, or copy it here, instead of a link to it",
    )


def _too_large(shown: str, max_bytes: int) -> UnreadableFile:
    return UnreadableFile(
        f"{shown}: larger than the {max_bytes // MiB} MiB repro reads from such a file",
        hint="is this the right file?",
    )


def _open_regular(
    path: Path, shown: str, max_bytes: int | None, follow_links: bool = True
) -> BinaryIO:
    """`path` opened for reading, refused unless a regular file of at most `max_bytes`: a
    FIFO, device or socket is refused before any read (opened non-blocking, it never waits
    for a writer), and the size is known before the first byte is read. Without
    `follow_links`, a link in the file's place is refused, not followed."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags if follow_links else flags | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise
    except OSError as err:
        if err.errno == errno.ELOOP and not follow_links:
            raise UnreadableFile(
                f"{shown}: a link, not a regular file",
                hint="repro reads this file itself, never what a link in its place names",
            ) from None
        raise UnreadableFile(f"{shown}: cannot read: {err.strerror or err}") from None
    handle = os.fdopen(fd, "rb")
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        handle.close()
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "a FIFO, device or socket"
        raise UnreadableFile(
            f"{shown}: {kind}, not a regular file",
            hint="remove it; repro reads only plain files here",
        )
    if max_bytes is not None and info.st_size > max_bytes:
        handle.close()
        raise _too_large(shown, max_bytes)
    return handle


def regular_file(path: Path, where: str | None = None) -> None:
    """Refuse `path` unless it is a regular file, for a reader that opens it itself."""
    shown = where or str(path)
    try:
        _open_regular(path, shown, None).close()
    except FileNotFoundError:
        raise UnreadableFile(f"{shown}: no such file") from None


def read_bytes(
    path: Path,
    where: str | None = None,
    max_bytes: int = MAX_TEXT_BYTES,
    follow_links: bool = True,
) -> bytes:
    """The bytes of the regular file `path`, at most `max_bytes` (see `_open_regular`)."""
    shown = where or str(path)
    with _open_regular(path, shown, max_bytes, follow_links) as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:  # grew while being read
        raise _too_large(shown, max_bytes)
    return data


def iter_lines(
    path: Path, where: str | None = None, max_line_bytes: int = MAX_LINE_BYTES
) -> Iterator[tuple[int, bytes]]:
    """The lines of the regular file `path` (numbered from 1, without the line break), read
    one at a time as the caller asks for them: a reader that needs the first few lines of a
    large file reads only those. A line longer than `max_line_bytes` is refused."""
    shown = where or str(path)
    try:
        handle = _open_regular(path, shown, None)
    except FileNotFoundError:
        raise UnreadableFile(f"{shown}: no such file") from None
    with handle:
        number = 0
        while line := handle.readline(max_line_bytes + 1):
            number += 1
            if len(line) > max_line_bytes and not line.endswith(b"\n"):
                raise UnreadableFile(
                    f"{shown}:{number}: a line longer than {max_line_bytes // MiB} MiB",
                    hint="is this the right file?",
                )
            yield number, line.rstrip(b"\r\n")


def read_text(
    path: Path,
    where: str | None = None,
    max_bytes: int = MAX_TEXT_BYTES,
    follow_links: bool = True,
) -> str:
    """`path` as UTF-8 text, at most `max_bytes` long."""
    shown = where or str(path)
    data = read_bytes(path, shown, max_bytes, follow_links)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UnreadableFile(
            f"{shown}: not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})",
            hint="save it as UTF-8, or restore the file repro wrote",
        ) from None


class DuplicateKey(ValueError):
    """A JSON object names one key twice: `json` would silently keep the last value."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict, refusing a key given twice (`object_pairs_hook`)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


def twice(where: str, err: DuplicateKey) -> UnreadableFile:
    """The one line for a key given twice in `where`."""
    return UnreadableFile(
        f"{where}: the key {json.dumps(str(err))[:80]} appears twice in one object",
        hint="keep one of them: repro does not guess which value was meant",
    )


def parse_json(text: str, where: str, max_depth: int = MAX_DEPTH) -> Any:
    """`text` as JSON, refusing documents nested deeper than `max_depth` and objects that
    name a key twice (which value counts would be a guess)."""
    try:
        value = json.loads(text, object_pairs_hook=unique_keys)
    except DuplicateKey as err:
        raise twice(where, err) from None
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


def read_json(
    path: Path,
    where: str | None = None,
    max_bytes: int = MAX_JSON_BYTES,
    follow_links: bool = True,
) -> Any:
    """`path` as a JSON document, bounded in size, encoding and depth (`follow_links=False`
    for a file something else wrote, such as an image's own process: a link it left in the
    file's place is refused, never read through)."""
    shown = where or str(path)
    return parse_json(read_text(path, shown, max_bytes, follow_links), shown)


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
