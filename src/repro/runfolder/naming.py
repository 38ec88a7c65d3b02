"""A run folder's name: the one place it is made (bench, accept and `repro run`)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from repro.errors import ReproError

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def fresh_run_dir(base: Path, name: str) -> Path:
    """`base/<UTC timestamp>-<name>`, the name made safe for a folder, with -2, -3, ... when
    that folder exists: the one place a run folder is named (bench, accept and `repro run`)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    run_dir = base / f"{stamp}-{_SAFE.sub('-', name)}"
    n = 1
    while run_dir.exists():
        n += 1
        run_dir = base / f"{stamp}-{_SAFE.sub('-', name)}-{n}"
    return run_dir


def new_run_dir(recipe_name: str, output: Path | None, base: Path = Path("runs")) -> Path:
    """`runs/<UTC timestamp>-<recipe>/` unless `output` is given; never reuses a folder."""
    if output is not None:
        run_dir = output
        if run_dir.exists() and any(run_dir.iterdir()):
            raise ReproError(
                f"{run_dir} already exists and is not empty",
                hint="pick another --output, or continue that run with --resume",
            )
    else:
        run_dir = fresh_run_dir(base, recipe_name)
    run_dir.mkdir(parents=True, exist_ok=True)
    return run_dir
