"""The registry-free base image that the simulator image is built on.

CI and many lab machines reach no container registry, yet the whole pipeline must run there.
The base is `python:3.12-slim` when the engine has it (or can pull it within a few seconds);
otherwise it is made from Debian packages with mmdebstrap and `docker import` (shared
DESIGN.md, "Containers"). Either way it is tagged by a hash of how it was made, so it is built
once per machine and found again by that tag.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from repro.errors import ReproError
from repro.image.engine import client, image_exists
from repro.progress import Progress, quiet

BASE_REPOSITORY = "repro-base"
SLIM_IMAGE = "python:3.12-slim"
PULL_TIMEOUT_S = 15

# Debian 12 packages of the mmdebstrap base: Python 3 with aiohttp for the simulator, git for
# applying patches the way Dockerfile.sglang does on a real SGLang checkout.
DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
DEBIAN_PACKAGES = ("python3", "python3-aiohttp", "git", "ca-certificates", "patch")
# The Python of that suite: what wheels installed into the Debian base are built for.
DEBIAN_BASE_PYTHON = "3.11"
# Packages for the python:3.12-slim route (pip inside the build; needs PyPI access).
SLIM_PIP_PACKAGES = ("aiohttp==3.11.18",)


def base_recipe_text(method: str) -> str:
    """What decides the content of the base image; its hash is the image tag."""
    if method == "slim":
        return f"slim\n{SLIM_IMAGE}\n" + "\n".join(SLIM_PIP_PACKAGES) + "\napt:git,patch\n"
    return f"mmdebstrap\n{DEBIAN_SUITE}\n{DEBIAN_MIRROR}\n" + "\n".join(DEBIAN_PACKAGES) + "\n"


def base_tag(method: str) -> str:
    digest = hashlib.sha256(base_recipe_text(method).encode()).hexdigest()[:12]
    return f"{BASE_REPOSITORY}:{method}-{digest}"


def existing_base_image() -> str | None:
    """The content-tagged base image when this machine already has it."""
    return next((base_tag(m) for m in ("slim", "mmdebstrap") if image_exists(base_tag(m))), None)


def ensure_base_image(progress: Progress = quiet) -> str:
    """Return the reference of a local base image, making it first if needed.

    Tries, in order: an existing content-tagged base; python:3.12-slim (local, or pulled with a
    short timeout); mmdebstrap from Debian packages.
    """
    existing = existing_base_image()
    if existing is not None:
        return existing
    if _slim_available(progress):
        return _build_from_slim(progress)
    return _build_with_mmdebstrap(progress)


def ensure_debian_base_image(progress: Progress = quiet, build: bool = True) -> str | None:
    """The mmdebstrap base (Debian's own Python, `DEBIAN_BASE_PYTHON`), made if needed: for
    images whose wheels must match the base's Python, whatever a registry offers. With
    `build=False`, None when it does not exist yet."""
    tag = base_tag("mmdebstrap")
    if image_exists(tag):
        return tag
    return _build_with_mmdebstrap(progress) if build else None


def _slim_available(progress: Progress) -> bool:
    if image_exists(SLIM_IMAGE):
        return True
    progress(f"trying to pull {SLIM_IMAGE} (at most {PULL_TIMEOUT_S} s)")
    try:
        subprocess.run(
            ["docker", "pull", "--quiet", SLIM_IMAGE],
            capture_output=True,
            timeout=PULL_TIMEOUT_S,
            check=True,
        )
    except (subprocess.TimeoutExpired, subprocess.CalledProcessError):
        progress(f"{SLIM_IMAGE} cannot be pulled here; making the base from Debian packages")
        return False
    return True


def _build_from_slim(progress: Progress) -> str:
    tag = base_tag("slim")
    progress(f"building {tag} from {SLIM_IMAGE}")
    dockerfile = (
        f"FROM {SLIM_IMAGE}\n"
        "RUN apt-get update && apt-get install -y --no-install-recommends git patch "
        "&& rm -rf /var/lib/apt/lists/*\n"
        f"RUN pip install --no-cache-dir {' '.join(SLIM_PIP_PACKAGES)}\n"
    )
    with tempfile.TemporaryDirectory(prefix="repro-base-") as context:
        (Path(context) / "Dockerfile").write_text(dockerfile)
        client().build(context, tags=[tag], load=True, progress=False)
    return tag


def _build_with_mmdebstrap(progress: Progress) -> str:
    tag = base_tag("mmdebstrap")
    mmdebstrap = _require_mmdebstrap()
    with tempfile.TemporaryDirectory(prefix="repro-base-") as workdir:
        rootfs = Path(workdir) / "rootfs.tar"
        progress(f"making {tag} from Debian {DEBIAN_SUITE} packages with mmdebstrap (~1 min)")
        command = [
            mmdebstrap,
            "--quiet",
            "--variant=apt",
            f"--include={','.join(DEBIAN_PACKAGES)}",
            "--dpkgopt=path-exclude=/usr/share/doc/*",
            "--dpkgopt=path-exclude=/usr/share/man/*",
            DEBIAN_SUITE,
            str(rootfs),
            DEBIAN_MIRROR,
        ]
        # A fixed SOURCE_DATE_EPOCH keeps file times stable between runs on the same packages.
        env = {**os.environ, "SOURCE_DATE_EPOCH": "1700000000"}
        result = subprocess.run(command, capture_output=True, text=True, env=env)
        if result.returncode != 0:
            raise ReproError(
                f"mmdebstrap failed to make the base image (exit {result.returncode}):\n"
                + "\n".join(result.stderr.strip().splitlines()[-10:]),
                hint="mmdebstrap needs root and access to Debian's package mirror",
            )
        progress(f"importing the root filesystem as {tag}")
        client().import_(
            rootfs,
            tag=tag,
            changes=[
                "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "ENV LANG=C.UTF-8",
                'CMD ["python3"]',
            ],
        )
    return tag


def _require_mmdebstrap() -> str:
    found = shutil.which("mmdebstrap")
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "mmdebstrap"],
            capture_output=True,
            check=False,
        )
        found = shutil.which("mmdebstrap")
        if found:
            return found
    raise ReproError(
        f"no base image: {SLIM_IMAGE} cannot be pulled and mmdebstrap is not installed",
        hint=f"`docker pull {SLIM_IMAGE}` where a registry is reachable, or install mmdebstrap "
        "(Debian/Ubuntu: apt-get install mmdebstrap) and run as root",
    )
