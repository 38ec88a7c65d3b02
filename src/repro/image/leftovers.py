"""What a killed `repro image build` leaves behind, and its removal by the next build.

A build works in a `/tmp/repro-build-*` folder and checks a found image under a temporary
`repro/<spec>:verify-*` tag; both are removed when the build ends, even on Ctrl-C, but not
on SIGKILL or a power loss. So each name carries its owner (this host and the process id),
and the next build removes those whose owner process is gone: never a live build's, never
one made on another host that shares the engine.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import tempfile
import uuid
from pathlib import Path

from repro.image.engine import client

WORKDIR_PREFIX = "repro-build-"
SCRATCH_TAG = "verify"


def _host() -> str:
    """A short stable name of this host, safe in an image tag and a folder name."""
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def owner_name(pid: int | None = None) -> str:
    """`<host>-<pid>`: the owner part of a leftover's name (this process by default)."""
    return f"{_host()}-{os.getpid() if pid is None else pid}"


# `<host>-<pid>-`: the owner part of a leftover's name
_OWNED = re.compile(r"^(?P<host>[0-9a-f]{8})-(?P<pid>[0-9]+)-")


def workdir_prefix() -> str:
    """The prefix of this process's build folder under the temp dir."""
    return f"{WORKDIR_PREFIX}{owner_name()}-"


def scratch_tag(spec_name: str) -> str:
    """A temporary tag of this process for a check build of `spec_name`."""
    return f"repro/{spec_name}:{SCRATCH_TAG}-{owner_name()}-{uuid.uuid4().hex[:12]}"


def _orphaned(owned_name: str) -> bool:
    """Whether the name says it was made on this host by a process that no longer runs."""
    match = _OWNED.match(owned_name)
    if match is None or match["host"] != _host():
        return False
    pid = int(match["pid"])
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def stale_workdirs(tmp: Path | None = None) -> list[Path]:
    """Build folders under the temp dir whose build was killed."""
    root = tmp or Path(tempfile.gettempdir())
    return [
        path
        for path in root.glob(f"{WORKDIR_PREFIX}*")
        if path.is_dir()
        and not path.is_symlink()
        and _orphaned(path.name.removeprefix(WORKDIR_PREFIX))
    ]


def stale_scratch_tags() -> list[str]:
    """Temporary `repro/*:verify-*` tags whose build was killed."""
    tags = []
    for image in client().image.list(filters=[("reference", f"repro/*:{SCRATCH_TAG}-*")]):
        for tag in image.repo_tags:
            version = tag.rsplit(":", 1)[-1]
            if version.startswith(f"{SCRATCH_TAG}-") and _orphaned(
                version.removeprefix(f"{SCRATCH_TAG}-")
            ):
                tags.append(tag)
    return tags


def remove_stale() -> list[str]:
    """Remove what killed builds left (folders, then tags); what was removed, for a note."""
    removed = []
    for path in stale_workdirs():
        shutil.rmtree(path, ignore_errors=True)
        removed.append(str(path))
    for tag in stale_scratch_tags():
        client().image.remove(tag)  # untags; the layers stay for the build cache
        removed.append(tag)
    return removed
