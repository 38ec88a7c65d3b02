"""Writing files so that a reader never sees half of one.

Every file repro writes for someone else to read (locks, run records, reports, plots,
manifests, Compose overrides) goes through `write_atomic`: a crash, a full disk or a Ctrl-C
leaves either the old file or the new one, never a truncated mix, and no temp file behind.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: str | bytes, mode: int = 0o644) -> None:
    """Replace `path` with `data` (str is written as UTF-8) in one rename.

    The temp file is unique (mkstemp) and lives in the same directory, so concurrent writers
    never share it and the rename stays on one filesystem; it is fsynced before the rename so
    a power loss cannot leave an empty file under the final name. The parent directory is
    created when missing.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
