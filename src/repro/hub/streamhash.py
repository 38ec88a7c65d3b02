"""sha256 of each download while huggingface_hub writes it, so verifying costs no extra pass.

huggingface_hub 2.x writes every file into a process-unique `blobs/<etag>.<id>.incomplete`
(an LFS file's etag is its sha256), front to back, closes it and renames it to `blobs/<sha256>`
(`file_download.py`: `_download_to_tmp_and_move`, `http_get`). While `snapshot_download` runs,
a watcher finds those files and a follower thread per file reads and hashes the bytes already
written (hashlib and file reads release the GIL, so this runs beside the download).

A digest is only handed on when it is sure to be of the file now in the cache:
- the follower read the file from its first byte to its end without the size ever shrinking,
  and saw it renamed to `blobs/<sha256>` while it still held it open (so it is that inode);
- huggingface_hub logged no retry while downloading: a resume whose Range the server ignores
  truncates the file and writes it again from byte 0 (`http_get`), which a follower could
  miss between two looks; after a retry, or when its warnings are silenced, nothing streamed
  counts and verification reads the files from disk as before.
The caller matches a digest to a file by (device, inode, size, mtime); anything unmatched is
hashed from disk, and a streamed digest that differs from the lock is checked on disk too.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

FileKey = tuple[int, int, int, int]  # st_dev, st_ino, st_size, st_mtime_ns

_CHUNK = 8 << 20
_POLL_S = 0.01
_HF_LOGGER = "huggingface_hub"


def file_key(st: os.stat_result) -> FileKey:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class _RetrySeen(logging.Handler):
    """Notes any warning huggingface_hub logs (`http_get` logs one before every retry)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen = False

    def emit(self, record: logging.LogRecord) -> None:
        self.seen = True


class StreamHasher:
    """`with StreamHasher(blobs, sha256s) as hasher: snapshot_download(...)`, then
    `hasher.digests()`: {file key: sha256} of the files hashed while they were written."""

    def __init__(self, blobs: Path, sha256s: Iterable[str], poll_s: float = _POLL_S) -> None:
        self._blobs = blobs
        self._wanted = frozenset(sha256s)
        self._poll_s = poll_s
        self._done = threading.Event()
        self._followed: set[str] = set()
        self._followers: list[threading.Thread] = []
        self._digests: dict[FileKey, str] = {}
        self._retries = _RetrySeen()
        self._logger = logging.getLogger(_HF_LOGGER)
        self._watcher = threading.Thread(target=self._watch, name="hub-hash-watch", daemon=True)

    def __enter__(self) -> StreamHasher:
        self._logger.addHandler(self._retries)
        if self._wanted:
            self._watcher.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._done.set()
        if self._watcher.is_alive():
            self._watcher.join()
        for follower in self._followers:
            follower.join()
        self._logger.removeHandler(self._retries)

    def digests(self) -> dict[FileKey, str]:
        """The streamed digests that may stand in for reading the file again (see module doc)."""
        if self._retries.seen or not self._logger.isEnabledFor(logging.WARNING):
            return {}
        return dict(self._digests)

    def _watch(self) -> None:
        while not self._done.is_set():
            self._discover()
            self._done.wait(self._poll_s)

    def _discover(self) -> None:
        try:
            names = os.listdir(self._blobs)
        except FileNotFoundError:
            return
        for name in names:
            sha256 = name.split(".", 1)[0]
            new = name.endswith(".incomplete") and name not in self._followed
            if new and sha256 in self._wanted:
                self._followed.add(name)
                follower = threading.Thread(target=self._follow, args=(name, sha256), daemon=True)
                self._followers.append(follower)
                follower.start()

    def _follow(self, name: str, sha256: str) -> None:
        path, final = self._blobs / name, self._blobs / sha256
        try:
            f = path.open("rb", buffering=0)
        except FileNotFoundError:
            return  # already renamed or removed: verification reads it from disk
        with f:
            digest, pos = hashlib.sha256(), 0
            view = memoryview(bytearray(_CHUNK))
            while True:
                size = os.fstat(f.fileno()).st_size
                if size < pos:
                    return  # truncated, being written again: not ours to vouch for
                if size > pos:
                    n = f.readinto(view[: min(size - pos, _CHUNK)]) or 0
                    digest.update(view[:n])
                    pos += n
                    continue
                if not path.exists():
                    break  # closed and renamed into place, or removed after a failure
                if self._done.is_set():
                    return  # the download ended without finishing this file
                self._done.wait(self._poll_s)
            while n := f.readinto(view) or 0:
                digest.update(view[:n])
                pos += n
            mine = os.fstat(f.fileno())
            try:
                placed = final.stat()
            except FileNotFoundError:
                return
            if file_key(placed) == file_key(mine) and mine.st_size == pos:
                self._digests[file_key(mine)] = digest.hexdigest()
