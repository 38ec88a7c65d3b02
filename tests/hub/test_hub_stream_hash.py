"""sha256 taken while a file downloads (repro.hub.streamhash), against the local Hub server."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from hubserver.repos import random_bytes
from hubserver.server import HubServer
from repro.hub import FetchReport, SpaceMargin, VerificationFailed, fetch_pins, resolve_repo

NO_MARGIN = SpaceMargin(fraction=0, keep_free=0)
MiB = 1 << 20


def _open_partials(blobs: Path, sha256: str) -> tuple[int, int]:
    """File descriptors on the partial download of the blob `sha256` (huggingface_hub's
    `blobs/<sha256>.<id>.incomplete`): this process's, and its children's (repro's hashing
    worker)."""
    children = []
    for task in Path("/proc/self/task").iterdir():
        if (task / "children").exists():
            children += (task / "children").read_text().split()
    here = _fds_on(os.getpid(), blobs, sha256)
    return here, sum(_fds_on(int(pid), blobs, sha256) for pid in children)


def _fds_on(pid: int, blobs: Path, sha256: str) -> int:
    count = 0
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return 0  # it exited meanwhile
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        count += target.startswith(f"{blobs / sha256}.") and target.endswith(".incomplete")
    return count


def test_a_download_is_hashed_while_it_is_written(hub: HubServer, tmp_path: Path) -> None:
    hub.add_repo("org/big", {"config.json": b"{}", "model.safetensors": random_bytes(24 * MiB, 3)})
    go = hub.pause_after("model.safetensors", 12 * MiB)
    pin = resolve_repo("org/big", endpoint=hub.endpoint)
    done: list[FetchReport | BaseException] = []

    def fetch() -> None:
        try:
            done.append(
                fetch_pins([pin], cache_dir=tmp_path, endpoint=hub.endpoint, margin=NO_MARGIN)
            )
        except BaseException as error:
            done.append(error)

    worker = threading.Thread(target=fetch)
    worker.start()
    blobs = tmp_path / "models--org--big" / "blobs"
    [weights] = [f.sha256 for f in pin.files if f.sha256]
    deadline = time.monotonic() + 60
    while (
        sum(_open_partials(blobs, weights)) < 2
        and time.monotonic() < deadline
        and worker.is_alive()
    ):
        time.sleep(0.01)  # huggingface_hub writes the partial file, and repro reads it
    readers = _open_partials(blobs, weights)
    go.set()
    worker.join(60)
    assert readers == (1, 1)  # huggingface_hub's writer here, repro's reader in its worker
    report = done[0]
    assert isinstance(report, FetchReport), report
    repo = report.repos[0]
    assert (repo.hashed_files, repo.hashed_while_downloading) == (1, 1)


def test_a_resume_answered_with_a_whole_corrupt_file_is_refused(
    hub: HubServer, tmp_path: Path
) -> None:
    """The server ignores the resume's Range and sends the whole file again, corrupt where the
    first attempt was already written: huggingface_hub truncates and rewrites the file, so
    what a reader saw of the first attempt must not vouch for it."""
    hub.add_repo("org/big", {"config.json": b"{}", "model.safetensors": random_bytes(16 * MiB, 5)})
    hub.drop_after("model.safetensors", 12 * MiB)
    hub.ignore_ranges("model.safetensors")
    hub.corrupt("model.safetensors", skip=1)  # the first attempt is intact
    pin = resolve_repo("org/big", endpoint=hub.endpoint)
    with pytest.raises(VerificationFailed, match=r"model\.safetensors: sha256"):
        fetch_pins([pin], cache_dir=tmp_path, endpoint=hub.endpoint, margin=NO_MARGIN)
    first, second = hub.downloads("model.safetensors")[-2:]
    assert second.range == f"bytes={10 * MiB}-" and second.status == 200
    assert first.sent == 12 * MiB and second.sent == 16 * MiB
    snapshot = tmp_path / "models--org--big" / "snapshots" / (pin.sha or "")
    assert not (snapshot / "model.safetensors").exists()
