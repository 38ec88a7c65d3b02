"""Publish a model the project makes into the Hub cache as one commit, as if downloaded.

For a machine with no Hub: the files land in huggingface_hub's own layout
(`models--org--name/{blobs,snapshots/<commit>,refs/<branch>}`, see `repro.hub.cache`), so that
`repro lock` with the Hub offline pins the commit from the cache (`resolve_from_cache`),
`repro fetch` finds every file present and verifies it, and the server loads the commit from
the mounted cache like any downloaded one. Blobs are named as the Hub's ETags name them: the
sha256 of an LFS file (the weights), the git blob sha1 of any other; the commit is a sha1 of
every path with its blob, so the same files give the same commit on every machine.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from fnmatch import fnmatchcase
from pathlib import Path

from repro.fsutil import write_atomic
from repro.hub.cache import storage_dir

# Files a new Hub repository keeps in LFS: the binary formats of the default .gitattributes
# the Hub writes into every model repository.
LFS_PATTERNS = ("*.safetensors", "*.bin", "*.pt", "*.pth", "*.gguf", "*.model", "*.tiktoken")


def blob_name(path: str, content: bytes) -> str:
    """The Hub's ETag of a file: sha256 for LFS files (weights), git's blob sha1 otherwise."""
    if any(fnmatchcase(path, pattern) for pattern in LFS_PATTERNS):
        return hashlib.sha256(content).hexdigest()
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def commit_of(files: Mapping[str, bytes]) -> str:
    """A 40-hex commit id for exactly these files (paths and contents)."""
    digest = hashlib.sha1(b"repro published commit\0")
    for path in sorted(files):
        digest.update(path.encode() + b"\0" + blob_name(path, files[path]).encode() + b"\n")
    return digest.hexdigest()


def publish_to_cache(
    repo: str, files: Mapping[str, bytes], cache: Path, branch: str = "main"
) -> str:
    """Write `files` as one commit of model `repo` into the Hub cache at `cache` and point
    `refs/<branch>` at it; returns the commit. Publishing the same files again changes
    nothing; other commits of the repository stay."""
    storage = storage_dir(cache, repo)
    commit = commit_of(files)
    snapshot = storage / "snapshots" / commit
    for path, content in sorted(files.items()):
        blob = storage / "blobs" / blob_name(path, content)
        if not blob.is_file() or blob.stat().st_size != len(content):
            write_atomic(blob, content)
        link = snapshot / path
        link.parent.mkdir(parents=True, exist_ok=True)
        target = os.path.relpath(blob, link.parent)
        if link.is_symlink() and os.readlink(link) == target:
            continue
        link.unlink(missing_ok=True)
        link.symlink_to(target)
    write_atomic(storage / "refs" / branch, commit)
    return commit


def publish_folder(repo: str, folder: Path, cache: Path, branch: str = "main") -> Path:
    """Publish every file under `folder` as one commit of `repo` (`publish_to_cache`);
    returns the snapshot folder, which a server's --model-path can name."""
    files = {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }
    commit = publish_to_cache(repo, files, cache, branch)
    return storage_dir(cache, repo) / "snapshots" / commit
