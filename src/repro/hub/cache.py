"""The Hugging Face Hub cache on disk: what is already there, and whether the rest fits.

Layout (huggingface_hub's own): `<cache>/models--org--name/{blobs,snapshots/<sha>,refs}`;
LFS blobs are named by their sha256, snapshot entries are symlinks to blobs. huggingface_hub
2.x downloads into process-unique `blobs/<etag>.<id>.incomplete` files that a killed process
leaves behind and no later run can resume; they are removed before the space check.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from filelock import FileLock, Timeout
from huggingface_hub.file_download import repo_folder_name

from repro.hub.errors import InsufficientSpace
from repro.schema.lock import FileEntry, RepoPin
from repro.units import GiB, human_bytes

FileState = Literal["present", "missing", "damaged"]


@dataclass(frozen=True)
class SpaceMargin:
    """Free space to keep beyond the download: `fraction` of it plus `keep_free` bytes."""

    fraction: float = 0.05
    keep_free: int = GiB

    def reserve(self, needed: int) -> int:
        return int(needed * self.fraction) + self.keep_free if needed > 0 else 0


def hub_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """The Hub cache huggingface_hub uses, by its own precedence: HF_HUB_CACHE (or the legacy
    HUGGINGFACE_HUB_CACHE), else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
    ~/.cache/huggingface/hub.

    The one answer for every stage: `repro fetch` downloads there, `repro doctor` measures
    its disk and `repro launch` mounts it into the server. Read from `env` (default: the
    environment now), not from `huggingface_hub.constants`, which froze it at import.
    """
    env = os.environ if env is None else env

    def path(value: str) -> Path:
        return Path(os.path.expandvars(value)).expanduser()

    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(var):
            return path(env[var])
    if env.get("HF_HOME"):
        return path(env["HF_HOME"]) / "hub"
    xdg = env.get("XDG_CACHE_HOME")
    base = path(xdg) if xdg else Path(env.get("HOME") or Path.home()) / ".cache"
    return base / "huggingface" / "hub"


def cache_root(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The Hub cache to use, as an absolute path: `cache_dir`, else `hub_cache_dir()`."""
    return (Path(cache_dir).expanduser() if cache_dir else hub_cache_dir()).absolute()


def storage_dir(cache: Path, repo: str, repo_type: Literal["model", "dataset"] = "model") -> Path:
    """A repository's folder in the Hub cache, named as huggingface_hub names it (the one
    place repro builds it: fetch, doctor, launch and Hub prompt datasets read it here)."""
    return cache / repo_folder_name(repo_id=repo, repo_type=repo_type)


def snapshot_dir(cache: Path, pin: RepoPin) -> Path:
    assert pin.sha is not None
    return storage_dir(cache, pin.repo) / "snapshots" / pin.sha


def file_state(cache: Path, pin: RepoPin, entry: FileEntry) -> FileState:
    """Whether `entry` is complete in the cache at the pinned commit (or as a reusable blob)."""
    pointer = snapshot_dir(cache, pin) / entry.path
    if pointer.exists():
        return "present" if pointer.stat().st_size == entry.size else "damaged"
    if entry.sha256:
        blob = storage_dir(cache, pin.repo) / "blobs" / entry.sha256
        if blob.is_file() and blob.stat().st_size == entry.size:
            return "present"  # huggingface_hub links an existing blob without downloading
    return "missing"


def remove_cached_file(cache: Path, pin: RepoPin, entry: FileEntry) -> None:
    """Drop `entry` from the cache (its blob and snapshot link) so the next fetch re-downloads."""
    pointer = snapshot_dir(cache, pin) / entry.path
    if pointer.is_symlink():
        target = pointer.resolve()
        if target.is_file() and target.parent.name == "blobs":
            target.unlink()
    pointer.unlink(missing_ok=True)
    if entry.sha256:
        (storage_dir(cache, pin.repo) / "blobs" / entry.sha256).unlink(missing_ok=True)


def remove_stale_partials(cache: Path, pin: RepoPin, entries: list[FileEntry]) -> int:
    """Remove partial downloads of `entries` that no running download holds; bytes freed."""
    storage = storage_dir(cache, pin.repo)
    blobs, locks = storage / "blobs", cache / ".locks" / storage.name
    freed = 0
    for entry in entries:
        if not entry.sha256 or not blobs.is_dir():
            continue
        partials = [
            *blobs.glob(f"{entry.sha256}.*.incomplete"),
            blobs / f"{entry.sha256}.incomplete",
        ]
        partials = [p for p in partials if p.is_file()]
        if not partials:
            continue
        lock = FileLock(str(locks / f"{entry.sha256}.lock"), timeout=0)
        try:
            with lock:
                for partial in partials:
                    freed += partial.stat().st_size
                    partial.unlink(missing_ok=True)
        except (Timeout, OSError):
            continue  # another process is downloading it right now
    return freed


def nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path("/")


def free_bytes(path: Path) -> int:
    return shutil.disk_usage(nearest_existing(path)).free


_FETCH_SPACE_HINT = (
    "free space there, or download elsewhere: set HF_HUB_CACHE=/big/disk/hub or "
    "pass --cache-dir /big/disk/hub (the server must mount the same cache); "
    "the margin is --margin-percent and --keep-free"
)


def check_space(
    needed: int, cache: Path, margin: SpaceMargin, what: str, hint: str = _FETCH_SPACE_HINT
) -> int:
    """Free bytes at `cache`; raise `InsufficientSpace` when `needed` + margin does not fit.
    The default hint names `repro fetch`'s options; other callers give their own."""
    where = nearest_existing(cache)
    free = shutil.disk_usage(where).free
    reserve = margin.reserve(needed)
    if needed > 0 and needed + reserve > free:
        raise InsufficientSpace(
            f"not enough disk space for {what}: {human_bytes(needed)} to download "
            f"+ {human_bytes(reserve)} margin = {human_bytes(needed + reserve)} needed, "
            f"{human_bytes(free)} free at {cache}"
            + (f" (filesystem of {where})" if where != cache else ""),
            hint=hint,
        )
    return free
