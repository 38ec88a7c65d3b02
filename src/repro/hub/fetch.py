"""Download pinned repositories into the Hub cache: space check first, verify after.

Order of work for `fetch_pins`:
1. what is already complete in the cache at each pinned commit (nothing is downloaded twice;
   a rerun after an interruption only fetches what is missing),
2. the space check: bytes still to download + margin vs free space on the cache's filesystem,
   before any byte is written,
3. an access check (one HEAD) on every repository that needs downloading but the first, so a
   gated drafter fails before the 600 GB model is pulled (the first one's download fails on its
   own first request, before any byte),
4. `snapshot_download(repo, revision=sha, allow_patterns=<the locked paths>)` with
   huggingface_hub's progress bars (it retries a dropped connection with a Range request),
5. verification: every size, and sha256 of what was just downloaded (all with `verify_all`);
   the sha256 is taken while the file downloads, in a worker process (`streamhash`), so it
   costs no pass of its own.
"""

from __future__ import annotations

import glob
import os
import time
from collections.abc import Sequence
from pathlib import Path

from huggingface_hub import constants, get_hf_file_metadata, hf_hub_url, snapshot_download

from repro.hub.cache import (
    SpaceMargin,
    cache_root,
    check_space,
    file_state,
    remove_cached_file,
    remove_stale_partials,
    snapshot_dir,
    storage_dir,
)
from repro.hub.errors import HubError, hub_errors
from repro.hub.models import FetchReport, RepoFetch
from repro.hub.streamhash import FileKey, StreamHasher
from repro.hub.verify import raise_on_mismatch, verify_pin
from repro.progress import Progress, quiet
from repro.schema.lock import FileEntry, RepoPin
from repro.units import human_bytes


def is_offline() -> bool:
    """HF_HUB_OFFLINE (huggingface_hub reads it at import; the environment is checked too)."""
    env = os.environ.get("HF_HUB_OFFLINE", "").upper() in {"1", "ON", "YES", "TRUE"}
    return constants.is_offline_mode() or env


def fetch_pins(
    pins: Sequence[RepoPin],
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    margin: SpaceMargin | None = None,
    verify_all: bool = False,
    endpoint: str | None = None,
    max_workers: int = 8,
    dry_run: bool = False,
    on_event: Progress = quiet,
) -> FetchReport:
    """Make every pinned file present and verified in the Hub cache; see the module doc."""
    cache = cache_root(cache_dir)
    margin = margin or SpaceMargin()
    offline = is_offline()
    report = FetchReport(cache_dir=str(cache), offline=offline)
    real = [p for p in pins if not p.simulated]
    for pin in pins:
        if pin.simulated:
            on_event(f"{pin.repo}: simulated deployment, no weights to fetch")
    todo: dict[str, list[FileEntry]] = {}
    for pin in real:
        todo[pin.repo] = _to_download(cache, pin, offline, dry_run, on_event)
    needed = sum(f.size for files in todo.values() for f in files)
    report.needed_bytes = needed
    labels = ", ".join(p.label for p in real if todo[p.repo])
    if offline and needed:
        raise _offline_error(cache, real, todo)
    if needed and not dry_run:
        report.removed_partial_bytes = sum(
            remove_stale_partials(cache, p, todo[p.repo]) for p in real
        )
        if report.removed_partial_bytes:
            on_event(
                f"removed {human_bytes(report.removed_partial_bytes)} of stale partial downloads"
            )
    if needed:
        report.free_bytes = check_space(needed, cache, margin, labels)
        on_event(
            f"{human_bytes(needed)} to download into {cache} "
            f"({human_bytes(report.free_bytes)} free)"
        )
    simulated = [
        RepoFetch(repo=p.repo, sha=None, snapshot=None, simulated=True) for p in pins if p.simulated
    ]
    # a dry run checks every repository (a pinned commit that does not exist is an error);
    # a download skips the first: its own first requests are the same check, before any byte
    checked = [p for p in real if todo[p.repo]][0 if dry_run else 1 :]
    for pin in checked:
        _check_access(pin, todo[pin.repo], endpoint)
    if dry_run:
        report.repos = [_planned(cache, p, todo[p.repo]) for p in real] + simulated
        return report
    for pin in real:
        report.repos.append(
            _fetch_one(cache, pin, todo[pin.repo], verify_all, endpoint, max_workers, on_event)
        )
    report.repos += simulated
    return report


def _to_download(
    cache: Path, pin: RepoPin, offline: bool, dry_run: bool, on_event: Progress
) -> list[FileEntry]:

    out = []
    for entry in pin.files:
        state = file_state(cache, pin, entry)
        if state == "damaged" and not dry_run:
            on_event(f"{pin.repo}/{entry.path}: wrong size in the cache, downloading it again")
            remove_cached_file(cache, pin, entry)
        if state != "present" or (offline and not (snapshot_dir(cache, pin) / entry.path).exists()):
            out.append(entry)
    return out


def _offline_error(cache: Path, pins: list[RepoPin], todo: dict[str, list[FileEntry]]) -> HubError:
    missing = [(p, f) for p in pins for f in todo[p.repo]]
    shown = ", ".join(f"{p.repo}/{f.path}" for p, f in missing[:4])
    more = f" and {len(missing) - 4} more" if len(missing) > 4 else ""
    total = sum(f.size for _, f in missing)
    return HubError(
        f"HF_HUB_OFFLINE is set and {len(missing)} locked file(s) ({human_bytes(total)}) are not "
        f"in the cache at {cache}: {shown}{more}",
        hint="unset HF_HUB_OFFLINE to download them, or point HF_HUB_CACHE (or --cache-dir) at a "
        "Hub cache that has them",
    )


def _planned(cache: Path, pin: RepoPin, todo: list[FileEntry]) -> RepoFetch:
    return RepoFetch(
        repo=pin.repo,
        sha=pin.sha,
        snapshot=str(snapshot_dir(cache, pin)),
        files=len(pin.files),
        total_bytes=pin.total_bytes,
        downloaded_bytes=sum(f.size for f in todo),
    )


def _check_access(pin: RepoPin, todo: list[FileEntry], endpoint: str | None) -> None:
    """One HEAD on the smallest file to download: gated/auth errors surface before any byte."""
    assert pin.sha is not None
    probe = min(todo, key=lambda f: f.size)
    url = hf_hub_url(pin.repo, probe.path, revision=pin.sha, endpoint=endpoint)
    with hub_errors(pin.repo, pin.sha, endpoint):
        get_hf_file_metadata(url, endpoint=endpoint)


def _fetch_one(
    cache: Path,
    pin: RepoPin,
    todo: list[FileEntry],
    verify_all: bool,
    endpoint: str | None,
    max_workers: int,
    on_event: Progress,
) -> RepoFetch:

    assert pin.sha is not None
    started = time.monotonic()
    snapshot = snapshot_dir(cache, pin)
    streamed: dict[FileKey, str] = {}
    if any(not (snapshot / f.path).exists() for f in pin.files):
        if todo:
            on_event(
                f"{pin.label}: downloading {len(todo)} of {len(pin.files)} files "
                f"({human_bytes(sum(f.size for f in todo))})"
            )
        blobs = storage_dir(cache, pin.repo) / "blobs"
        # the worker's wait after the download: what it had not hashed yet, at 50 MB/s or more
        finish_s = 60 + sum(f.size for f in todo) / 50e6
        hasher = StreamHasher(blobs, [f.sha256 for f in todo if f.sha256], finish_s=finish_s)
        with hasher, hub_errors(pin.repo, pin.sha, endpoint):
            snapshot_download(
                pin.repo,
                revision=pin.sha,
                allow_patterns=[glob.escape(f.path) for f in pin.files],
                cache_dir=cache,
                endpoint=endpoint,
                max_workers=max_workers,
            )
            downloaded = time.monotonic()
        streamed = hasher.digests()
    else:
        on_event(f"{pin.label}: all {len(pin.files)} files already in the cache")
        downloaded = time.monotonic()
    hash_paths = None if verify_all else [f.path for f in todo]
    verified = verify_pin(cache, pin, hash_paths, streamed)
    raise_on_mismatch(cache, pin, verified.problems)
    done = time.monotonic()
    return RepoFetch(
        repo=pin.repo,
        sha=pin.sha,
        snapshot=str(snapshot),
        files=len(pin.files),
        total_bytes=pin.total_bytes,
        downloaded_bytes=sum(f.size for f in todo),
        hashed_files=verified.hashed,
        hashed_while_downloading=verified.streamed,
        seconds=round(done - started, 3),
        verify_seconds=round(done - downloaded, 3),
    )
