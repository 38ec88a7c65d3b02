"""The simulator base image: repro's stand-in for an `lmsysorg/sglang` nightly.

It carries the simulator (`repro.sim`, standard library + aiohttp, and the option catalogs it
parses argv with, `repro/catalogs/`) behind an `sglang` shim package, so compose files,
rendered argv and patch application are the same as on a GPU image.
Tagged by a hash of everything copied into it, so it is rebuilt only when that changes.
"""

from __future__ import annotations

import hashlib
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
