"""Repositories of the local Hub: files (in memory or on disk), commits and branches."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

CHUNK = 1 << 20
LFS_SUFFIXES = (
    ".safetensors",
    ".bin",
    ".pt",
    ".pth",
    ".gguf",
    ".model",
    ".tiktoken",
    ".parquet",
)


def random_bytes(size: int, seed: int | str = 0) -> bytes:
    """Deterministic pseudo-random content (same seed, same bytes, same sha256)."""
    return random.Random(f"{seed}:{size}").randbytes(size)


@dataclass
class HubFile:
    """One file of a commit: in memory (`data`) or on disk (`source`, for big benchmarks)."""

    path: str
    data: bytes | None = None
    source: Path | None = None
    lfs: bool | None = None
    size: int = field(init=False)
    sha256: str = field(init=False)
    oid: str = field(init=False)

    def __post_init__(self) -> None:
        if (self.data is None) == (self.source is None):
            raise ValueError("give exactly one of data or source")
        digest = hashlib.sha256()
        if self.data is not None:
            self.size = len(self.data)
            digest.update(self.data)
        else:
            assert self.source is not None
            self.size = self.source.stat().st_size
            with self.source.open("rb") as f:
                while chunk := f.read(CHUNK):
                    digest.update(chunk)
        self.sha256 = digest.hexdigest()
        if self.lfs is None:
            self.lfs = self.path.endswith(LFS_SUFFIXES)
        blob = self.pointer() if self.lfs else (self.data or b"")
        self.oid = hashlib.sha1(b"blob %d\0" % len(blob) + blob).hexdigest()

    def pointer(self) -> bytes:
        return (
            "version https://git-lfs.github.com/spec/v1\n"
            f"oid sha256:{self.sha256}\nsize {self.size}\n"
        ).encode()

    def read(self, start: int, end: int) -> bytes:
        if self.data is not None:
            return self.data[start:end]
        assert self.source is not None
        with self.source.open("rb") as f:
            f.seek(start)
            return f.read(end - start)


@dataclass
class HubRepo:
    repo_id: str
    gated: bool | str = False
    authorized: set[str] = field(default_factory=set)
    commits: dict[str, dict[str, HubFile]] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)
    kind: str = "model"  # or "dataset"

    def commit(self, files: Iterable[HubFile], branch: str = "main") -> str:
        """Make a commit from `files` on `branch` (deterministic sha) and move the branch."""
        tree = {f.path: f for f in files}
        parent = self.refs.get(branch, "")
        listing = "".join(f"{p}:{f.oid}\n" for p, f in sorted(tree.items()))
        sha = hashlib.sha1(f"{self.repo_id}\n{parent}\n{listing}".encode()).hexdigest()
        self.commits[sha] = tree
        self.refs[branch] = sha
        return sha

    def update(
        self,
        branch: str = "main",
        put: Mapping[str, bytes] | None = None,
        delete: Iterable[str] = (),
    ) -> str:
        """New commit on `branch`: the branch head with files put (added/replaced) or deleted."""
        tree = dict(self.commits[self.refs[branch]])
        for path in delete:
            tree.pop(path)
        for path, data in (put or {}).items():
            tree[path] = HubFile(path, data)
        return self.commit(tree.values(), branch)

    def resolve(self, revision: str) -> str | None:
        if revision in self.commits:
            return revision
        return self.refs.get(revision)
