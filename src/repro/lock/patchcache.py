"""The patch cache: each remote diff of an image's patch set, kept once, named by its sha256.

A remote patch is a build input like a wheel. It is fetched once from its `url:` (or, where
that is out of reach, put in place by the user with `repro image patch add`), pinned by sha256
in the image spec or the lock, and held to that pin at every use: the lock, the image build
and the engine dry-start. A file whose bytes are not the pinned ones is refused, naming both
hashes. Unpinned diffs (before the first lock) are found again through a small index by URL.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro.errors import ReproError
from repro.fsutil import write_atomic
from repro.lock.patches import MAX_DIFF_BYTES, RefusedRedirect, download_diff
from repro.schema.image import RemoteDiff
from repro.schema.lock import PatchPin
from repro.settings import PATCH_CACHE

SUFFIX = ".diff"
BY_URL = "by-url"  # <sha256 of the URL> -> the sha256 of the diff last fetched from it


class PatchChanged(ReproError):
    """A patch whose bytes are not the pinned ones."""


class PatchMissing(ReproError):
    """A pinned patch that is neither in the cache nor reachable at its URL."""


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """REPRO_PATCH_CACHE, else the user's cache folder's repro/patches."""
    env = os.environ if environ is None else environ
    configured = PATCH_CACHE.read(env)
    if configured:
        return Path(configured).expanduser()
    return Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "repro" / "patches"


def cached_path(sha256: str, root: Path | None = None) -> Path:
    return (root or cache_dir()) / f"{sha256}{SUFFIX}"


def add_command(spec_name: str, diff: RemoteDiff) -> str:
    """The command that puts a copy of `diff` into the cache, checked against its pin."""
    return f"repro image patch add {spec_name} {diff.name} FILE"


def missing_line(spec_name: str, diff: RemoteDiff, pinned: str | None) -> str:
    """One line: the patch is not in the cache, where it would be, and how to put it there."""
    where = cached_path(pinned) if pinned else cache_dir()
    return (
        f"patch {diff.name} is not in the patch cache ({where}); `repro lock` fetches it from "
        f"its URL, or `{add_command(spec_name, diff)}` puts a copy in place"
    )


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _url_key(url: str) -> str:
    return _digest(url.encode())


def changed_message(diff: RemoteDiff, where: str, actual: str, pinned: str) -> str:
    return f"patch {diff.name} changed: {where} has sha256 {actual}, pinned {pinned}"


def read_cached(diff: RemoteDiff, pinned: str | None, root: Path | None = None) -> bytes | None:
    """The cached bytes of `diff` (by its pin, else by its URL's index entry), checked against
    the pin; None when the cache has no copy."""
    root = root or cache_dir()
    sha = pinned
    if sha is None:
        index = root / BY_URL / _url_key(diff.url)
        sha = index.read_text().strip() if index.is_file() else None
        if not sha:
            return None
    path = cached_path(sha, root)
    if not path.is_file():
        return None
    if path.stat().st_size > MAX_DIFF_BYTES:
        raise PatchChanged(
            f"patch {diff.name}: {path} is larger than {MAX_DIFF_BYTES >> 20} MiB",
            hint="remove it; `repro lock` fetches the patch again",
        )
    data = path.read_bytes()
    actual = _digest(data)
    if actual != sha:
        raise PatchChanged(
            changed_message(diff, f"the cached file {path}", actual, sha),
            hint=f"remove it and put the pinned patch in place: {add_command('SPEC', diff)}",
        )
    return data


def store(diff: RemoteDiff, data: bytes, root: Path | None = None) -> Path:
    """Keep `data` under its sha256 and note it as what `diff`'s URL gave."""
    if len(data) > MAX_DIFF_BYTES:
        raise ReproError(f"the patch {diff.name} is larger than {MAX_DIFF_BYTES >> 20} MiB")
    root = root or cache_dir()
    sha = _digest(data)
    path = cached_path(sha, root)
    if not path.is_file() or _digest(path.read_bytes()) != sha:
        write_atomic(path, data)  # never a truncated diff that later reads as changed
    write_atomic(root / BY_URL / _url_key(diff.url), sha + "\n")
    return path


def fetch(
    spec_name: str,
    diff: RemoteDiff,
    pinned: str | None,
    *,
    root: Path | None = None,
    download: Callable[[str], bytes] = download_diff,
) -> bytes:
    """`diff`'s bytes: from the cache, else downloaded once from its URL into the cache;
    refused when they are not the pinned ones."""
    cached = read_cached(diff, pinned, root)
    if cached is not None:
        return cached
    try:
        data = download(diff.url)
    except RefusedRedirect:
        raise
    except ReproError as err:
        raise PatchMissing(
            f"{missing_line(spec_name, diff, pinned)}; its URL did not answer: {err.message}",
            hint=f"download {diff.url} where it is reachable, then "
            f"`{add_command(spec_name, diff)}`",
        ) from None
    actual = _digest(data)
    if pinned is not None and actual != pinned:
        raise PatchChanged(
            changed_message(diff, diff.url, actual, pinned),
            hint="a pinned diff must not move: pin the URL to a fixed commit, or put the "
            f"pinned file in place with `{add_command(spec_name, diff)}`",
        )
    store(diff, data, root)
    return data


def add(
    spec_name: str, diff: RemoteDiff, pinned: str | None, file: Path, root: Path | None = None
) -> tuple[Path, str]:
    """Put the user's copy of `diff` into the cache; refused unless it is the pinned one.
    Returns where it went and its sha256."""
    try:
        size = file.stat().st_size
    except OSError as err:
        raise ReproError(f"cannot read the patch file {file}: {err.strerror}") from None
    if size > MAX_DIFF_BYTES:
        raise ReproError(f"the patch file {file} is larger than {MAX_DIFF_BYTES >> 20} MiB")
    data = file.read_bytes()
    actual = _digest(data)
    if pinned is not None and actual != pinned:
        raise PatchChanged(
            changed_message(diff, str(file), actual, pinned),
            hint=f"image spec {spec_name} pins another file for {diff.name}",
        )
    return store(diff, data, root), actual


@dataclass
class PatchResolution:
    pins: list[PatchPin] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # remote diffs that differ from their pin


def resolve_patches(
    spec: Any, spec_data: dict[str, Any], patches_dir: Path, previous: list[PatchPin]
) -> PatchResolution:
    """Pins for the spec's patch set; fills each remote diff's sha256 into `spec_data`.

    `spec` is a `repro.schema.image.ImageSpec`, `spec_data` its JSON dump (edited in place).
    A remote diff's pin is the spec's, else the previous lock's (same URL), else what its URL
    gives now; its bytes come from the cache, fetched into it the first time.
    """
    result = PatchResolution()
    patch_set = spec.patch_set
    if patch_set is None:
        return result
    before = {(p.source, p.name): p for p in previous}
    for name in patch_set.local:
        path = patches_dir / patch_set.name / name
        rel = f"patches/{patch_set.name}/{name}"
        if path.is_file():
            digest = _digest(path.read_bytes())
        elif ("local", name) in before:
            digest = before[("local", name)].sha256  # the lock travelled without patches/
        else:
            raise ReproError(
                f"patch file {path} is missing",
                hint=f"image spec {spec.name} lists it in patch_set.local",
            )
        result.pins.append(PatchPin(name=name, source="local", path=rel, sha256=digest))
    for i, diff in enumerate(patch_set.remote):
        old = before.get(("remote", diff.name))
        pinned = diff.sha256 or (old.sha256 if old and old.url == diff.url else None)
        try:
            digest = _digest(fetch(spec.name, diff, pinned))
        except PatchChanged as err:
            if pinned is None:
                raise
            result.changed.append(err.message)
            digest = pinned
        result.pins.append(PatchPin(name=diff.name, source="remote", url=diff.url, sha256=digest))
        spec_data["patch_set"]["remote"][i]["sha256"] = digest
    return result


def add_for_spec(spec: Any, name: str, file: Path, root: Path | None = None) -> tuple[Path, str]:
    """`add` for the remote diff `name` of image spec `spec` (an ImageSpec), against its pin."""
    remote = spec.patch_set.remote if spec.patch_set else []
    for diff in remote:
        if diff.name == name:
            return add(spec.name, diff, diff.sha256, file, root)
    names = ", ".join(d.name for d in remote) or "none"
    raise ReproError(
        f"image spec {spec.name} has no remote patch {name!r} (its remote patches: {names})",
        hint=f"see patch_set.remote in images/{spec.name}.yaml",
    )
