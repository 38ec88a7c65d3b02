"""The tiny model of recipe qwen3-tiny-cpu, made in the CPU engine's base image and published.

A machine without a GPU has no Hub model small enough for a 2-core CPU, and may reach no Hub
at all: the project makes one (`repro.realengine.tinymodel`, deterministic from its seed) with
the torch, transformers and tokenizers of the CPU base image, with no network, and publishes
it into the Hub cache as one commit (`repro.hub.publish`). `repro lock` with the Hub offline
then pins that commit, and the server loads it from the mounted cache like a downloaded one.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from repro.image.cpu_base import ensure_cpu_base_image
from repro.image.engine import client
from repro.progress import Progress, quiet

TINY_REPO = "repro-tiny/qwen3-tiny"
GENERATOR = Path(__file__).resolve().parents[1] / "realengine" / "tinymodel.py"
_IN_CONTAINER = "/opt/repro/tinymodel.py"


def make_tiny_model(seed: int = 0, progress: Progress = quiet) -> dict[str, bytes]:
    """The tiny model's files (path in the repository -> bytes); the same seed gives the same
    bytes. Built in the CPU base image (made first if needed), without network."""
    image = ensure_cpu_base_image(progress)
    assert image is not None
    progress(f"making the tiny model (seed {seed}) in {image}")
    with tempfile.TemporaryDirectory(prefix="repro-tiny-model-") as out:
        client().run(
            image,
            ["python3", _IN_CONTAINER, "/out", "--seed", str(seed)],
            volumes=[(str(GENERATOR), _IN_CONTAINER, "ro"), (out, "/out")],
            envs={"HOME": "/tmp", "HF_HUB_OFFLINE": "1", "TQDM_DISABLE": "1"},
            user=f"{os.getuid()}:{os.getgid()}",
            networks=["none"],
            remove=True,
        )
        root = Path(out)
        return {
            path.relative_to(root).as_posix(): path.read_bytes()
            for path in sorted(root.rglob("*"))
            if path.is_file()
        }


def publish_tiny_model(cache: Path, seed: int = 0, progress: Progress = quiet) -> str:
    """Make the tiny model and publish it into the Hub cache at `cache` as `main` of
    `TINY_REPO`; returns the commit."""
    from repro.hub.publish import publish_to_cache  # deferred: repro.hub loads huggingface_hub

    return publish_to_cache(TINY_REPO, make_tiny_model(seed, progress), cache)
