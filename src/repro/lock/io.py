"""Reading and writing lock files: canonical JSON, atomic replace, one writer at a time."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from repro import fileread
from repro.errors import ReproError
from repro.fsutil import write_atomic
from repro.recipe.loader import RECIPE_SUFFIXES, YAML_LOCK_SUFFIXES
from repro.schema.drystart import DryStart
from repro.schema.lock import LOCK_SUFFIX, Lock, LockedImage, dump_json
from repro.schema.option_catalog import Catalog
from repro.schema.validation import first_problem
from repro.settings import LOCKS_DIR


class LockError(ReproError):
    """A lock file is missing, unreadable or stale."""


def default_locks_dir(recipe_file: Path | None = None) -> Path:
    """`$REPRO_LOCKS_DIR`, else `locks/` next to the recipe file's directory, else `./locks`.

    For `recipes/x.yaml` that is `locks/` at the project root, beside `recipes/` and `images/`.
    """
    env = LOCKS_DIR.read()
    if env:
        return Path(env)
    if recipe_file is not None:
        return recipe_file.absolute().parent.parent / "locks"
    return Path.cwd() / "locks"


def lock_path_for(name: str, recipe_file: Path | None = None) -> Path:
    """`locks/<recipe file>.lock.json`: keyed by the recipe's file, never by a `name:` it
    declares, so no two recipe files share a lock; by `name` when there is no recipe file."""
    key = name
    if (
        recipe_file is not None
        and recipe_file.suffix in RECIPE_SUFFIXES
        and not recipe_file.name.endswith(YAML_LOCK_SUFFIXES)
    ):
        key = recipe_file.stem
    return default_locks_dir(recipe_file) / f"{key}{LOCK_SUFFIX}"


def _read_document(path: Path) -> dict[str, Any]:
    try:
        data = fileread.read_json(path)
    except FileNotFoundError:
        raise LockError(
            f"no lock file at {path}", hint="create it with `repro lock RECIPE`"
        ) from None
    except fileread.UnreadableFile as err:
        raise LockError(err.message, hint=recover_hint(path)) from None
    if not isinstance(data, dict):
        raise LockError(f"{path}: a lock file holds a JSON object", hint=recover_hint(path))
    return data


def recover_hint(path: Path) -> str:
    """How to get past a corrupt lock: `repro lock` reads the old one to keep its image, so
    it refuses too until the file is moved aside (or restored from version control)."""
    return (
        f"restore it (`git checkout -- {path}`), or move it aside (`mv {path} {path}.bad`) "
        "and re-create it with `repro lock RECIPE` (its image is then built again)"
    )


def read_lock(path: Path) -> Lock:
    return parse_lock(_read_document(path), path)


def parse_lock(data: dict[str, Any], path: Path) -> Lock:
    """The lock document read from `path`, validated; a `LockError` names the first problem."""
    try:
        return Lock.model_validate(data)
    except ValidationError as exc:
        raise LockError(
            f"{path}: {first_problem(exc)}",
            hint=recover_hint(path),
        ) from None


@contextmanager
def _dir_lock(directory: Path) -> Iterator[None]:
    """Exclusive flock on the locks directory: one lock-file writer at a time."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def write_text_if_changed(path: Path, text: str) -> bool:
    """Atomically replace `path` with `text` unless it already holds exactly that."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with _dir_lock(path.parent):
        try:
            if path.read_text(encoding="utf-8") == text:
                return False
        except FileNotFoundError:
            pass
        write_atomic(path, text)
        return True


def write_lock(path: Path, lock: Lock) -> bool:
    """Write `lock` to `path` (atomic, canonical); False when the file was already identical."""
    return write_text_if_changed(path, lock.to_json())


def update_lock_image(lock_path: Path, image: LockedImage, catalog: Catalog | None = None) -> Lock:
    """Replace the lock's `image` section (and `catalog`, when given); nothing else changes,
    not even the bytes of the other sections.

    For the image stage: call it after a build or push with the image as it now is, and with
    the catalog extracted from the image. Returns the lock as written, so the caller carries
    it on without reading the file again.
    """
    path = Path(lock_path)
    with _dir_lock(path.parent):
        data = _read_document(path)
        data["image"] = image.model_dump(mode="json")
        if catalog is not None:
            data["catalog"] = catalog.to_dict()
        lock = parse_lock(data, path)
        write_atomic(path, dump_json(data))
    return lock


def update_lock_resolved(lock_path: Path, resolved: DryStart) -> Lock:
    """Replace the lock's `resolved` section (the engine dry-start); nothing else changes."""
    path = Path(lock_path)
    with _dir_lock(path.parent):
        data = _read_document(path)
        data["resolved"] = resolved.model_dump(mode="json")
        lock = parse_lock(data, path)
        write_atomic(path, dump_json(data))
    return lock
