"""sha256 of each download while huggingface_hub writes it, so verifying costs no extra pass.

huggingface_hub 2.x writes every file into a process-unique `blobs/<etag>.<id>.incomplete`
(an LFS file's etag is its sha256), front to back, closes it and renames it to `blobs/<sha256>`
(`file_download.py`: `_download_to_tmp_and_move`, `http_get`). While `snapshot_download` runs,
a watcher finds those files and a follower thread per file reads and hashes the bytes already
written. Watcher and followers run in a process of their own (this file, run as a script:
standard library only): huggingface_hub's HTTP reads are Python code, so a download is bound
by its process's GIL, and followers beside it in that process, waking every few milliseconds,
slowed it by 5-16% on a quiet 16-core machine (benchmarks/fetch_throughput.results.md); in
their own process they only take a core.

A digest is only handed on when it is sure to be of the file now in the cache:
- the follower read the file from its first byte to its end without the size ever shrinking,
  and saw it renamed to `blobs/<sha256>` while it still held it open (so it is that inode);
- huggingface_hub logged no retry while downloading: a resume whose Range the server ignores
  truncates the file and writes it again from byte 0 (`http_get`), which a follower could
  miss between two looks; after a retry, or when its warnings are silenced, nothing streamed
  counts and verification reads the files from disk as before.
The caller matches a digest to a file by (device, inode, size, mtime); anything unmatched is
hashed from disk, and a streamed digest that differs from the lock is checked on disk too.
So is everything when the worker cannot start, fails or misses its deadline.

Worker protocol: argv `BLOBS POLL_S`; stdin the wanted sha256s one per line, then an empty
line; stdin's end means the download ended; stdout one `dev ino size mtime_ns sha256` line
per file it vouches for.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

FileKey = tuple[int, int, int, int]  # st_dev, st_ino, st_size, st_mtime_ns

_CHUNK = 1 << 20  # a read and its hash stay in the core's cache
_POLL_S = 0.01
_FINISH_S = 60.0  # after the download ended: the worker reads what it had not reached yet
_KILL_WAIT_S = 5.0
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
    `hasher.digests()`: {file key: sha256} of the files hashed while they were written.
    `finish_s` bounds the wait for the worker once the block has ended."""

    def __init__(
        self,
        blobs: Path,
        sha256s: Iterable[str],
        poll_s: float = _POLL_S,
        finish_s: float = _FINISH_S,
    ) -> None:
        self._blobs = blobs
        self._wanted = sorted(set(sha256s))
        self._poll_s = poll_s
        self._finish_s = finish_s
        self._proc: subprocess.Popen[str] | None = None
        self._digests: dict[FileKey, str] = {}
        self._retries = _RetrySeen()
        self._logger = logging.getLogger(_HF_LOGGER)

    def __enter__(self) -> StreamHasher:
        self._logger.addHandler(self._retries)
        if self._wanted:
            self._proc = self._start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._logger.removeHandler(self._retries)
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if kind is not None:  # the download failed or was interrupted: nothing to vouch for
            _stop(proc)
            return
        try:
            out, _ = proc.communicate(timeout=self._finish_s)  # closes stdin: download done
        except subprocess.TimeoutExpired:
            _stop(proc)
            return
        if proc.returncode == 0:
            self._digests = _parse(out)

    def digests(self) -> dict[FileKey, str]:
        """The streamed digests that may stand in for reading the file again (see module doc)."""
        if self._retries.seen or not self._logger.isEnabledFor(logging.WARNING):
            return {}
        return dict(self._digests)

    def _start(self) -> subprocess.Popen[str] | None:
        argv = [sys.executable, "-I", "-S", __file__, str(self._blobs), repr(self._poll_s)]
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
        except (OSError, ValueError):  # no interpreter to run: verification reads from disk
            return None
        assert proc.stdin is not None
        try:
            proc.stdin.write("".join(f"{sha}\n" for sha in self._wanted) + "\n")
            proc.stdin.flush()
        except OSError:  # it exited at once
            _stop(proc)
            return None
        return proc


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.communicate(timeout=_KILL_WAIT_S)


def _parse(out: str) -> dict[FileKey, str]:
    digests: dict[FileKey, str] = {}
    for line in out.splitlines():
        dev, ino, size, mtime, sha256 = line.split()
        digests[(int(dev), int(ino), int(size), int(mtime))] = sha256
    return digests


class _Worker:
    """The watcher and its followers, in the worker process."""

    def __init__(self, blobs: Path, wanted: frozenset[str], poll_s: float) -> None:
        self.blobs, self.wanted, self.poll_s = blobs, wanted, poll_s
        self.done = threading.Event()
        self.followed: set[str] = set()
        self.followers: list[threading.Thread] = []
        self.digests: dict[FileKey, str] = {}

    def run(self, stdin: Iterable[str]) -> None:
        watcher = threading.Thread(target=self._watch, daemon=True)
        watcher.start()
        for _ in stdin:  # until the parent closes it: the download ended
            pass
        self.done.set()
        watcher.join()
        for follower in self.followers:
            follower.join()

    def _watch(self) -> None:
        while not self.done.is_set():
            self._discover()
            self.done.wait(self.poll_s)

    def _discover(self) -> None:
        try:
            names = os.listdir(self.blobs)
        except FileNotFoundError:
            return
        for name in names:
            sha256 = name.split(".", 1)[0]
            new = name.endswith(".incomplete") and name not in self.followed
            if new and sha256 in self.wanted:
                self.followed.add(name)
                follower = threading.Thread(target=self._follow, args=(name, sha256), daemon=True)
                self.followers.append(follower)
                follower.start()

    def _follow(self, name: str, sha256: str) -> None:
        path, final = self.blobs / name, self.blobs / sha256
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
                if self.done.is_set():
                    return  # the download ended without finishing this file
                self.done.wait(self.poll_s)
            while n := f.readinto(view) or 0:
                digest.update(view[:n])
                pos += n
            mine = os.fstat(f.fileno())
            try:
                placed = final.stat()
            except FileNotFoundError:
                return
            if file_key(placed) == file_key(mine) and mine.st_size == pos:
                self.digests[file_key(mine)] = digest.hexdigest()


def _worker_main(argv: list[str]) -> None:
    wanted: set[str] = set()
    for line in sys.stdin:
        if not line.strip():
            break
        wanted.add(line.strip())
    worker = _Worker(Path(argv[0]), frozenset(wanted), float(argv[1]))
    worker.run(sys.stdin)
    sys.stdout.write("".join(f"{' '.join(map(str, k))} {v}\n" for k, v in worker.digests.items()))
    sys.stdout.flush()


if __name__ == "__main__":
    _worker_main(sys.argv[1:])
    os._exit(0)  # the parent waits for this exit: skip the interpreter's teardown
