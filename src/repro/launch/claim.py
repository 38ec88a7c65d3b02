"""One repro process at a time owns a deployment: an exclusive claim on its state folder.

A `repro run` holds the claim of its recipe's deployment from its first stage to its last,
`repro launch` while it starts the server; a second one is refused at once, naming the
holder, instead of racing to `docker compose up` and then, failing, taking down the first
one's server in its clean-up. The claim is an flock: the kernel releases it when the holder
exits, whatever way (even `kill -9`), so a stale claim never blocks anyone. A campaign folder
is claimed the same way (`folder_claim`), by the one `repro campaign run` that runs it.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from repro.errors import ReproError

CLAIM_FILE = "owner.lock"
_HELD: dict[Path, int] = {}  # claims this process holds (a run's launch stage re-enters one)


class DeploymentBusy(ReproError):
    """Another repro process owns the deployment right now."""


@contextmanager
def folder_claim(folder: Path, refusal: Callable[[str], ReproError]) -> Iterator[None]:
    """Hold the claim on `folder` for the block; another process holding it is refused with
    `refusal(its pid)`. The claim is re-entrant within one process."""
    key = folder.absolute()
    if key in _HELD:
        yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    try:  # never through a link: the claim file is the folder's own
        fd = os.open(folder / CLAIM_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as err:
        raise ReproError(f"{folder / CLAIM_FILE}: cannot claim: {err.strerror or err}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise refusal(holder if holder.isdigit() else "?") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _HELD[key] = fd
    try:
        yield
    finally:
        del _HELD[key]
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


@contextmanager
def deployment_claim(folder: Path, name: str) -> Iterator[None]:
    """Hold the claim on deployment `name` (state folder `folder`) for the block."""
    with folder_claim(
        folder,
        lambda holder: DeploymentBusy(
            f"deployment {name!r} is in use by another repro process (pid {holder})",
            hint=f"wait until it ends, or interrupt it; `repro status {name}` shows the server",
        ),
    ):
        yield
