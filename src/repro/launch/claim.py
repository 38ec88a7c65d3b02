"""One repro process at a time owns a deployment: an exclusive claim on its state folder.

A `repro run` holds the claim of its recipe's deployment from its first stage to its last,
`repro launch` while it starts the server; a second one is refused at once, naming the
holder, instead of racing to `docker compose up` and then, failing, taking down the first
one's server in its clean-up. The claim is an flock: the kernel releases it when the holder
exits, whatever way (even `kill -9`), so a stale claim never blocks anyone. A campaign folder
is claimed the same way (`folder_claim`), by the one `repro campaign run` that runs it. The
claim file is only ever the claim: a link, hard link, FIFO or another user's file in its
place is refused, naming it, and nothing is written through it.
"""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from repro.errors import ReproError

CLAIM_FILE = "owner.lock"
_HELD: dict[Path, int] = {}  # claims this process holds (a run's launch stage re-enters one)


class DeploymentBusy(ReproError):
    """Another repro process owns the deployment right now."""


def _open_claim(path: Path) -> int:
    """The claim file, opened for writing, refused unless it is the folder's own: a regular
    file of ours with one name. Through a link, a hard link or another user's file repro would
    truncate and overwrite a file elsewhere with its pid; a FIFO would make it wait or fail.
    Opened without following a link and without blocking, checked before anything is written."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        mode: int | None = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):  # a FIFO or device is never opened
        raise _not_ours(path, _kind(mode))
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as err:  # a link put in its place since: ELOOP
        raise ReproError(f"{path}: cannot claim: {err.strerror or err}") from None
    info = os.fstat(fd)
    problem = None
    if not stat.S_ISREG(info.st_mode):
        problem = _kind(info.st_mode)
    elif info.st_nlink != 1:
        problem = f"a file with {info.st_nlink} names (a hard link)"
    elif info.st_uid != os.geteuid():
        problem = f"a file of another user (uid {info.st_uid})"
    if problem is not None:
        os.close(fd)
        raise _not_ours(path, problem)
    return fd


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a link"
    return "a directory" if stat.S_ISDIR(mode) else "a FIFO, device or socket"


def _not_ours(path: Path, what: str) -> ReproError:
    return ReproError(
        f"{path}: {what}, not a claim file repro made",
        hint=f"remove it (`rm {path}`): repro makes {CLAIM_FILE} itself and writes only its "
        "pid there, never through a link or into a file with another name",
    )


@contextmanager
def folder_claim(folder: Path, refusal: Callable[[str], ReproError]) -> Iterator[None]:
    """Hold the claim on `folder` for the block; another process holding it is refused with
    `refusal(its pid)`. The claim is re-entrant within one process."""
    key = folder.absolute()
    if key in _HELD:
        yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    fd = _open_claim(folder / CLAIM_FILE)
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
