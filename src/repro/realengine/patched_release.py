"""A release's SGLang package with an image's patch set laid over it, for the dry-start.

Where an image carries a patch set, the start-up code SGLang runs on the GPU is the release's
with those patches applied, as the image build applies them (image/context/apply-patches.sh:
the spec's remote diffs, then its local patches, in order, `-p1` from the checkout's root).
Here the copy's package sits at `python/sglang/`, as in a checkout, so a pull request's paths
(`a/python/sglang/...`) land on the wheel's `sglang/`; paths outside the package (tests,
docs) do not reach the engine and are left out. A copy is made once per release and patch
hashes, under `.venv-sglang/patched/<release>-<hash>/`.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from repro.errors import ReproError
from repro.lock import patchcache
from repro.schema.image import ImageSpec

PACKAGE = Path("python") / "sglang"
INCLUDE = f"{PACKAGE.as_posix()}/*"
DONE = ".repro-patched"  # the patches a copy holds, written before it takes its name
APPLY_DEADLINE_S = 120


@dataclass(frozen=True)
class Patch:
    """One patch of the set, its bytes already held to its pin."""

    name: str
    sha256: str
    data: bytes


@dataclass(frozen=True)
class PatchSet:
    """The patches of an image's set that this machine has, and one line per one it lacks."""

    patches: list[Patch]
    missing: list[str]


class PatchDoesNotApply(ReproError):
    """A patch whose hunks do not fit the release's files."""


def patched_root(python: Path) -> Path:
    """Where the patched copies of the engine whose Python is `python` live."""
    return python.parent.parent / "patched"


def patch_set_for(spec: ImageSpec, patches_dir: Path) -> PatchSet:
    """The spec's patches in the order the build applies them: remote diffs from the patch
    cache (held to their pins; never downloaded here), then local files."""
    if spec.patch_set is None:
        return PatchSet([], [])
    patches: list[Patch] = []
    missing: list[str] = []
    for diff in spec.patch_set.remote:
        data = patchcache.read_cached(diff, diff.sha256)
        if data is None:
            missing.append(patchcache.missing_line(spec.name, diff, diff.sha256))
            continue
        patches.append(Patch(diff.name, hashlib.sha256(data).hexdigest(), data))
    for path in spec.local_patch_paths(patches_dir):
        if not path.is_file():
            missing.append(f"patch {path.name} is missing from {path.parent}")
            continue
        data = path.read_bytes()
        patches.append(Patch(path.name, hashlib.sha256(data).hexdigest(), data))
    return PatchSet(patches, missing)


def patched_package(release: str, package: Path, patches: Sequence[Patch], root: Path) -> Path:
    """The folder to put first on PYTHONPATH: a copy of `package` (release `release`'s
    `sglang` folder) with `patches` applied in order. Made once; refused, naming the file and
    hunk, when a patch does not apply."""
    if not (package / "__init__.py").is_file():
        raise ReproError(f"{package} is not an SGLang package (no __init__.py)")
    for patch in patches:
        actual = hashlib.sha256(patch.data).hexdigest()
        if actual != patch.sha256:
            raise patchcache.PatchChanged(
                f"patch {patch.name} changed: its bytes have sha256 {actual}, pinned {patch.sha256}"
            )
    key = hashlib.sha256("\n".join([release, *(p.sha256 for p in patches)]).encode())
    folder = root / f"{release}-{key.hexdigest()[:16]}"
    if (folder / DONE).is_file():
        return folder / PACKAGE.parent
    root.mkdir(parents=True, exist_ok=True)
    work = root / f".{folder.name}.{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    try:
        shutil.copytree(package, work / PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
        for index, patch in enumerate(patches):
            file = work / "patches" / f"{index:02d}-{patch.name}"
            file.parent.mkdir(exist_ok=True)
            file.write_bytes(patch.data)
            _apply(work, file, patch.name, release)
        (work / DONE).write_text("\n".join(f"{p.sha256}  {p.name}" for p in patches) + "\n")
        try:
            work.rename(folder)
        except OSError:
            if not (folder / DONE).is_file():  # another process made it meanwhile: use that
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder / PACKAGE.parent


def _apply(work: Path, file: Path, name: str, release: str) -> None:
    """`git apply` the patch in `work`, checked first; outside any repository (the ceiling
    keeps git from finding the checkout the engine lives in)."""
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(work.parent)}
    base = ["git", "apply", "-p1", f"--include={INCLUDE}"]
    for args in ([*base, "--check", str(file)], [*base, str(file)]):
        try:
            done = subprocess.run(
                args, cwd=work, env=env, capture_output=True, text=True, timeout=APPLY_DEADLINE_S
            )
        except subprocess.TimeoutExpired:
            raise ReproError(f"git apply of patch {name} took over {APPLY_DEADLINE_S} s") from None
        if done.returncode != 0:
            raise PatchDoesNotApply(
                f"patch {name} does not apply to SGLang {release}: "
                f"{_failure(done.stderr, file.read_text(errors='replace'))}",
                hint="the patch set must be made for this release's files",
            )


def _failure(stderr: str, diff: str) -> str:
    """The file and hunk git could not apply, from its `patch failed: FILE:LINE` line."""
    failed = re.search(r"patch failed: (\S+):(\d+)", stderr)
    if failed:
        path, line = failed.group(1), failed.group(2)
        return f"{path}, hunk {_hunk(diff, path, line) or f'at line {line}'}"
    lines = [line.removeprefix("error: ") for line in stderr.splitlines() if line.strip()]
    return lines[0] if lines else "git apply failed"


def _hunk(diff: str, path: str, line: str) -> str | None:
    """The `@@ -LINE,...` header of the hunk of `path` in `diff` that starts at `line`."""
    current = None
    for text in diff.splitlines():
        if text.startswith("+++ ") or text.startswith("--- "):
            name = text[4:].strip()
            if name != "/dev/null":
                current = name.split("/", 1)[1] if "/" in name else name
        elif current == path and re.match(rf"@@ -{line}(,\d+)? ", text):
            return text.split(" @@")[0] + " @@"
    return None


@dataclass(frozen=True)
class Applied:
    """What the dry-start runs for an image's patch set: the patched package's folder (None
    when the set could not be applied here), and one line that says so."""

    folder: Path | None
    line: str


def site_packages_package(python: Path) -> Path | None:
    """The `sglang` package installed in the virtual environment whose Python is `python`."""
    found = sorted(python.parent.parent.glob("lib/python3*/site-packages/sglang"))
    return found[0] if found else None


def apply_patch_set(
    spec: ImageSpec, patches_dir: Path, release: str, package: Path, python: Path
) -> Applied:
    """`spec`'s patch set over release `release`'s `package`, when this machine has every
    patch of it; else the line naming the first it lacks."""
    assert spec.patch_set is not None
    name = spec.patch_set.name
    found = patch_set_for(spec, patches_dir)
    if found.missing:
        return Applied(None, f"patch set {name} not applied: {found.missing[0]}")
    folder = patched_package(release, package, found.patches, patched_root(python))
    pins = ", ".join(f"{p.name} (sha256 {p.sha256[:12]})" for p in found.patches)
    return Applied(
        folder, f"patch set {name} applied over SGLang {release}'s start-up code: {pins}"
    )
