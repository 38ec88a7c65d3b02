"""A run folder on disk (docs/run-record.md): the one place it is named, and every file in it
read and written, with one error style.

bench and accept write their records here, `repro run` its stage state, report and `repro
runs` read them back. Writes are atomic (`repro.fsutil.write_atomic`) and strict JSON; reads
are bounded (`repro.fileread`) and end in the file's content or one `RunRecordError` line that
names the file, what is wrong and what to do.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from repro import fileread
from repro.errors import ReproError
from repro.fsutil import write_atomic
from repro.safetext import clean_lines
from repro.schema.record import first_error

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
SERVER_LOG = "server.log"
NOT_A_RUN = "pass a folder printed by `repro run`, or one written by `repro bench`"


class RunRecordError(ReproError):
    """A run folder or one of its files is missing, unreadable or not what it should be."""


# ---- naming ----------------------------------------------------------------------------------
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


# ---- writing ---------------------------------------------------------------------------------
def _finite(data: Any) -> Any:
    """`data` with every NaN and infinity replaced by None (JSON's null)."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: _finite(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_finite(v) for v in data]
    return data


def strict_json(data: Any, **options: Any) -> str:
    """`data` as strict JSON (RFC 8259): NaN and infinities, which it has no literal for,
    become null, so that every other tool reads the record; values JSON has no type for
    become str."""
    try:
        return json.dumps(data, allow_nan=False, default=str, **options)
    except ValueError:  # a non-finite float somewhere: the rare case pays for the walk
        return json.dumps(_finite(data), allow_nan=False, default=str, **options)


def write_json(path: Path, data: Any) -> None:
    """`data` as indented strict JSON, written atomically."""
    write_atomic(path, strict_json(data, indent=2, sort_keys=False) + "\n")


def write_model(path: Path, model: BaseModel, *, exclude_unset: bool = False) -> None:
    """A run-record model as its JSON file (docs/run-record.md)."""
    write_json(path, model.model_dump(mode="json", exclude_unset=exclude_unset))


def write_server_log(run_dir: Path, lines: Sequence[str]) -> None:
    """Keep a server's last log lines in a run folder as `server.log` (nothing when empty):
    the one writer for the bench record on a failed sweep and `repro run`'s folder at stop."""
    if lines:
        write_atomic(run_dir / SERVER_LOG, clean_lines("\n".join(lines)) + "\n")


# ---- reading ---------------------------------------------------------------------------------
def read_text(path: Path, hint: str = NOT_A_RUN) -> str:
    """A run file's text, bounded in size and encoding; a missing file says `hint`."""
    try:
        return fileread.read_text(path)
    except fileread.UnreadableFile as err:
        raise RunRecordError(err.message, hint=err.hint) from None
    except FileNotFoundError:
        raise RunRecordError(f"{path}: missing", hint=hint) from None
    except OSError as err:  # a folder where a file should be, say
        raise RunRecordError(f"{path}: cannot read: {err.strerror or err}", hint=hint) from None


def read_json(path: Path, hint: str = NOT_A_RUN, *, required: bool = True) -> Any:
    """A run file's JSON (None for a missing file that is not `required`), bounded in size,
    encoding and depth."""
    if not required and not path.exists():
        return None
    try:
        return fileread.parse_json(read_text(path, hint), str(path))
    except fileread.UnreadableFile as err:
        raise RunRecordError(err.message, hint=err.hint) from None


def read_model(path: Path, model: type[M], hint: str = NOT_A_RUN) -> M:
    """A run file as its model, a wrong field named with the file."""
    return validated(model.model_validate, read_json(path, hint), path)


def validated(validate: Callable[[Any], T], data: Any, path: Path) -> T:
    """`validate(data)`, its error naming the file and the field."""
    try:
        return validate(data)
    except ValidationError as err:
        raise RunRecordError(
            f"{path}: {first_error(err)}", hint="see docs/run-record.md for the expected fields"
        ) from None
