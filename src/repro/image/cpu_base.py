"""The CPU engine's base image: SGLang's own engine, built without a registry or a GPU.

The stand-in for an `lmsysorg/sglang` image on a machine with no GPU: SGLang 0.5.23 and its
pinned, hashed dependencies (`REQUIREMENTS`, the file scripts/ensure-sglang installs on the
host too),
installed from wheels the host downloads from the package registry into the build context
(the build itself has no network), on the registry-free Debian base (`repro.image.base`, the
mmdebstrap route: Debian 12's Python is the one the wheels are for). Layers, heavy first:
the wheels (their names, versions and sha256 in /opt/repro/wheels.json, which the image's
manifest and so the lock carry), the CPU-test layer of import stand-ins (`STANDINS`),
and the source layout Dockerfile.sglang patches. Tagged by a hash of all of it, so it is
built once per machine.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from repro.errors import ReproError
from repro.image.base import DEBIAN_BASE_PYTHON, ensure_debian_base_image
from repro.image.engine import client, image_exists
from repro.progress import Progress, quiet

CPU_BASE_REPOSITORY = "repro-sglang-cpu-base"
_REALENGINE = Path(__file__).resolve().parents[1] / "realengine"
REQUIREMENTS = _REALENGINE / "requirements-sglang-cpu.txt"
STANDINS = _REALENGINE / "standins"
STANDIN_FILES = ("sitecustomize.py", "repro_standins.py")  # as scripts/ensure-sglang copies
_DOCKERFILE = Path(__file__).resolve().parent / "context" / "sglang-cpu-base.Dockerfile"
WHEEL_CACHE = Path.home() / ".cache" / "repro" / "wheels"
# pip itself, run from its wheel inside the build (Debian's Python has no pip); hashed like
# every line of REQUIREMENTS (pip's --require-hashes mode wants all or none).
BOOTSTRAP_PIP = (
    "pip==23.2.1 \\\n"
    "    --hash=sha256:7ccf472345f20d35bdc9d1841ff5f313260c2c33fe417f48c30ac46cccabf5be\n"
)


def _requirements_text() -> str:
    return REQUIREMENTS.read_text(encoding="utf-8").rstrip("\n") + "\n" + BOOTSTRAP_PIP


def _layer_files() -> dict[str, Path]:
    """The CPU-test layer: destination in the context -> source file."""
    return {f"cpu-test-layer/{name}": STANDINS / name for name in STANDIN_FILES}


def cpu_base_tag(base_id: str) -> str:
    digest = hashlib.sha256(base_id.encode() + b"\0" + _requirements_text().encode())
    digest.update(_DOCKERFILE.read_bytes())
    for destination, source in _layer_files().items():
        digest.update(destination.encode() + b"\0" + source.read_bytes() + b"\0")
    return f"{CPU_BASE_REPOSITORY}:{DEBIAN_BASE_PYTHON}-{digest.hexdigest()[:12]}"


def ensure_cpu_base_image(progress: Progress = quiet, build: bool = True) -> str | None:
    """The tag of the CPU engine's base image, building it (and its base) if needed; with
    `build=False` nothing is built: None when it does not exist yet (for --dry-run)."""
    base_ref = ensure_debian_base_image(progress, build=build)
    if base_ref is None:
        return None
    tag = cpu_base_tag(client().image.inspect(base_ref).id)
    if image_exists(tag) or not build:
        return tag if image_exists(tag) else None
    wheels = download_wheels(progress)
    progress(f"building {tag} ({len(wheels)} wheels, SGLang's own engine for the CPU)")
    with tempfile.TemporaryDirectory(prefix="repro-cpu-base-") as context:
        root = Path(context)
        (root / "wheels").mkdir()
        for wheel in wheels:  # hard links where the cache shares the filesystem: no copying
            _link_or_copy(wheel, root / "wheels" / wheel.name)
        (root / "wheels" / "requirements.txt").write_text(_requirements_text())
        (root / "wheels.json").write_text(json.dumps(wheel_records(wheels), indent=1) + "\n")
        shutil.copyfile(_DOCKERFILE, root / "Dockerfile")
        for destination, source in _layer_files().items():
            target = root / destination
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        client().build(
            root,
            tags=[tag],
            build_args={"BASE_IMAGE": base_ref, "PYTHON_VERSION": DEBIAN_BASE_PYTHON},
            load=True,
            progress=False,
        )
    return tag


def download_wheels(progress: Progress = quiet) -> list[Path]:
    """Every pinned wheel, for the base's Python and this machine's architecture, in a
    folder of its own per requirements file (a rerun downloads nothing)."""
    text = _requirements_text()
    folder = WHEEL_CACHE / hashlib.sha256(text.encode()).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    requirements = folder / "requirements.txt"
    requirements.write_text(text)
    progress(f"downloading the pinned wheels into {folder} (once)")
    abi = "cp" + DEBIAN_BASE_PYTHON.replace(".", "")
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--only-binary=:all:",
        f"--python-version={DEBIAN_BASE_PYTHON}",
        "--implementation=cp",
        f"--abi={abi}",
        "--abi=abi3",
        "--abi=none",
        *(f"--platform={tag}" for tag in _platforms()),
        "-r",
        str(requirements),
        "-d",
        str(folder),
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise ReproError(
            "downloading the CPU engine's wheels failed:\n    "
            + "\n    ".join(result.stderr.strip().splitlines()[-8:]),
            hint="the host needs the package registry (PyPI); the image build itself does not",
        )
    return sorted(folder.glob("*.whl"))


def wheel_records(wheels: list[Path]) -> list[dict[str, str]]:
    """Name, version and sha256 of each wheel (what the lock records of the image's Python)."""
    records = []
    for wheel in wheels:
        name, version = wheel.name.split("-")[:2]
        sha256 = hashlib.sha256(wheel.read_bytes()).hexdigest()
        records.append({"name": name, "version": version, "file": wheel.name, "sha256": sha256})
    return records


def _platforms() -> list[str]:
    """The wheel platform tags Debian 12 (glibc 2.36) runs, newest first."""
    arch = platform.machine()
    glibc = [f"manylinux_2_{minor}_{arch}" for minor in range(36, 4, -1)]
    return [*glibc, f"manylinux2014_{arch}", f"manylinux2010_{arch}", f"manylinux1_{arch}"]


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        target.hardlink_to(source)
    except OSError:
        shutil.copyfile(source, target)
