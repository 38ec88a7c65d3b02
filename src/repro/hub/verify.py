"""Check cached files against a pin: every size, and sha256 where the Hub gave one."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from repro.hub.cache import remove_cached_file, snapshot_dir
from repro.hub.errors import VerificationFailed
from repro.hub.streamhash import FileKey, file_key
from repro.schema.lock import FileEntry, RepoPin

_BUFFER = 8 << 20


@dataclass(frozen=True)
class Mismatch:
    entry: FileEntry
    problem: str


def sha256_file(path: Path) -> str:
    with path.open("rb", buffering=0) as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


@dataclass(frozen=True)
class Verified:
    problems: list[Mismatch]
    hashed: int
    streamed: int  # of `hashed`: digests taken while downloading, not read again


def verify_pin(
    cache: Path,
    pin: RepoPin,
    hash_paths: Iterable[str] | None = None,
    streamed: Mapping[FileKey, str] | None = None,
) -> Verified:
    """Mismatches of `pin`'s files in the cache, and how many files were hashed.

    Sizes are always checked; sha256 for LFS files in `hash_paths` (all of them when None).
    A file whose (device, inode, size, mtime) is in `streamed` and whose streamed digest
    matches the lock is not read again (`streamhash`); the rest is hashed in threads
    (hashlib releases the GIL).
    """
    streamed = streamed or {}
    snapshot = snapshot_dir(cache, pin)
    wanted = None if hash_paths is None else set(hash_paths)
    problems: list[Mismatch] = []
    to_hash: list[FileEntry] = []
    from_stream = 0
    for entry in pin.files:
        path = snapshot / entry.path
        if not path.exists():
            problems.append(Mismatch(entry, "missing from the cache"))
            continue
        st = path.stat()
        if st.st_size != entry.size:
            problems.append(Mismatch(entry, f"size {st.st_size} != locked {entry.size}"))
        elif entry.sha256 and (wanted is None or entry.path in wanted):
            if streamed.get(file_key(st)) == entry.sha256:
                from_stream += 1
            else:
                to_hash.append(entry)
    workers = max(1, min(4, os.cpu_count() or 1, len(to_hash)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        digests = list(pool.map(lambda e: sha256_file(snapshot / e.path), to_hash))
    for entry, digest in zip(to_hash, digests, strict=True):
        locked = entry.sha256 or ""
        if digest != locked:
            problems.append(Mismatch(entry, f"sha256 {digest[:16]}… != locked {locked[:16]}…"))
    return Verified(problems, len(to_hash) + from_stream, from_stream)


def raise_on_mismatch(cache: Path, pin: RepoPin, problems: list[Mismatch]) -> None:
    """Remove the damaged files from the cache and raise `VerificationFailed` naming them."""
    if not problems:
        return
    for mismatch in problems:
        remove_cached_file(cache, pin, mismatch.entry)
    shown = "; ".join(f"{m.entry.path}: {m.problem}" for m in problems[:5])
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    raise VerificationFailed(
        f"{pin.label}: {len(problems)} file(s) do not match the lock: {shown}{more}",
        hint="the damaged files were removed from the cache; run `repro fetch` again to download "
        "them anew (if it keeps failing, the Hub content changed: re-lock and compare)",
    )
