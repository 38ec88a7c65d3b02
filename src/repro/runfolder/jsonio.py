"""A run file's JSON in and out, with one error style: writes are atomic
(`repro.fsutil.write_atomic`) and strict JSON; reads are bounded (`repro.fileread`) and end in
the file's content or one `RunRecordError` line that names the file, what is wrong and what to
do. `RunFolder` (folder.py) names the files; this module only moves their bytes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from repro import fileread
from repro.errors import ReproError
from repro.fsutil import write_atomic
from repro.schema.validation import first_problem

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

NOT_A_RUN = "pass a folder printed by `repro run`, or one written by `repro bench`"


class RunRecordError(ReproError):
    """A run folder or one of its files is missing, unreadable or not what it should be."""


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


def json_lines(models: Iterable[BaseModel]) -> str:
    """Models as JSON lines (compact strict JSON, one per line)."""
    return "".join(
        strict_json(m.model_dump(mode="json"), separators=(",", ":")) + "\n" for m in models
    )


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
    """A JSON file as its model, a wrong field named with the file."""
    return validated(model.model_validate, read_json(path, hint), path)


def validated(
    validate: Callable[[Any], T],
    data: Any,
    path: Path,
    hint: str = "see docs/run-record.md for the expected fields",
) -> T:
    """`validate(data)`, its error naming the file and the field."""
    try:
        return validate(data)
    except ValidationError as err:
        raise RunRecordError(f"{path}: {first_problem(err)}", hint=hint) from None
