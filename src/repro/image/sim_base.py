"""The simulator base image: repro's stand-in for an `lmsysorg/sglang` nightly.

It carries the simulator (`repro.sim`, standard library + aiohttp, and the option catalogs it
parses argv with, `repro/catalogs/`) behind an `sglang` shim package, so compose files,
rendered argv and patch application are the same as on a GPU image.
Tagged by a hash of everything copied into it, so it is rebuilt only when that changes.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import shutil
import tempfile
from pathlib import Path

from repro.image.base import ensure_base_image, existing_base_image
from repro.image.engine import client, image_exists
from repro.progress import Progress, quiet

SIM_BASE_REPOSITORY = "repro-sim-base"
SIM_SGLANG_VERSION = "0.5.23"

_PACKAGE = Path(__file__).resolve().parents[1]
_DOCKERFILE = Path(__file__).resolve().parent / "context" / "sim-base.Dockerfile"
_SHIM = _PACKAGE / "sim" / "shim"
# what of the repro package the simulator needs; the shim goes to SGLang's source tree instead
_SIM_PACKAGE_DIRS = ("sim", "catalogs")


# the shim's files a patch standing in for another SGLang changes (paths in SGLang's checkout)
_VERSION_FILE = "python/sglang/version.py"
_SPEC_INFO_FILE = "python/sglang/srt/speculative/spec_info.py"
_ENUM_MEMBERS = re.compile(r"(?:^    [A-Z][A-Z0-9_]* = auto\(\)\n)+", re.MULTILINE)


def stand_in_patch(sglang_version: str, algorithms: list[str]) -> str:
    """A unified diff (-p1, against the simulator image's SGLang source tree) that makes the
    simulator stand in for an image of another SGLang release with a patch set: the version it
    reports (and so the option catalog it parses argv with, sim/server_argparser.py) and its
    speculative algorithms (sim/registry.py): `algorithms`, the release's builtins plus what
    the patch set registers (as sgl-project/sglang#29907 adds DDTREE), NONE last, become
    spec_info.py's enum."""
    version, spec_info = (
        (_SHIM / path.removeprefix("python/")).read_text(encoding="utf-8")
        for path in (_VERSION_FILE, _SPEC_INFO_FILE)
    )
    names = [*dict.fromkeys(n for n in algorithms if n != "NONE"), "NONE"]
    members = "".join(f"    {name} = auto()\n" for name in names)
    patched, found = _ENUM_MEMBERS.subn(members, spec_info, count=1)
    assert found, "the shim's spec_info.py no longer lists SpeculativeAlgorithm's members"
    changed = {
        _VERSION_FILE: (version, f'__version__ = "{sglang_version}"\n'),
        _SPEC_INFO_FILE: (spec_info, patched),
    }
    return "".join(
        "".join(
            difflib.unified_diff(
                old.splitlines(keepends=True),
                new.splitlines(keepends=True),
                f"a/{path}",
                f"b/{path}",
            )
        )
        for path, (old, new) in changed.items()
        if old != new
    )


def _context_files() -> dict[str, Path]:
    """Destination in the build context -> source file."""
    files: dict[str, Path] = {"Dockerfile": _DOCKERFILE}
    for source in sorted(_SHIM.rglob("*")):
        if source.is_file() and "__pycache__" not in source.parts:
            files[f"sglang/python/{source.relative_to(_SHIM).as_posix()}"] = source
    files["repro/__init__.py"] = _PACKAGE / "__init__.py"
    for directory in _SIM_PACKAGE_DIRS:
        for source in sorted((_PACKAGE / directory).rglob("*")):
            copied = source.is_file() and not source.is_relative_to(_SHIM)
            if copied and "__pycache__" not in source.parts:
                files[f"repro/{source.relative_to(_PACKAGE).as_posix()}"] = source
    return files


def sim_base_tag(base_ref: str) -> str:
    digest = hashlib.sha256(base_ref.encode())
    for destination, source in _context_files().items():
        digest.update(destination.encode() + b"\0" + source.read_bytes() + b"\0")
    return f"{SIM_BASE_REPOSITORY}:{SIM_SGLANG_VERSION}-{digest.hexdigest()[:12]}"


def ensure_sim_base_image(progress: Progress = quiet, build: bool = True) -> str | None:
    """The tag of the simulator base image, building it (and its base) if needed.

    With `build=False` nothing is built: None when it does not exist yet (for --dry-run).
    """
    base_ref = ensure_base_image(progress) if build else existing_base_image()
    if base_ref is None:
        return None
    base_id = client().image.inspect(base_ref).id
    tag = sim_base_tag(base_id)
    if image_exists(tag) or not build:
        return tag if image_exists(tag) else None
    progress(f"building {tag}")
    with tempfile.TemporaryDirectory(prefix="repro-sim-base-") as context:
        for destination, source in _context_files().items():
            target = Path(context) / destination
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        client().build(
            context, tags=[tag], build_args={"BASE_IMAGE": base_ref}, load=True, progress=False
        )
    return tag
