"""Reading the option catalog of an image from the registry, without building on it.

The image's own Python runs the image build's `write-manifest.py --catalog-only` (mounted
read-only, the network off), so the catalog is what a build of that image would put in its
manifest and lock. Used by `repro image bump` to see what a newer base changes.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from python_on_whales.exceptions import DockerException

from repro import fileread
from repro.errors import ReproError
from repro.image.engine import checked_reference, client
from repro.image.release_catalog import WRITE_MANIFEST
from repro.schema.option_catalog import Catalog

# python3 importing SGLang's parser in an image (the CUDA images import torch first)
RUN_DEADLINE_S = 900


def pull_pinned(reference: str) -> str:
    """Pull `repository:tag` and return `repository@sha256:...`, the digest the registry gave."""
    repository = checked_reference(reference).rsplit(":", 1)[0]
    try:
        client().image.pull(reference, quiet=True)
        digests = client().image.inspect(reference).repo_digests
    except DockerException as err:
        detail = (err.stderr or str(err)).strip().splitlines()
        raise ReproError(
            f"could not pull {reference}: {detail[-1] if detail else 'docker failed'}",
            hint="check the tag exists (docker manifest inspect) and `docker login` to its "
            "registry",
        ) from None
    for digest in digests:
        if digest.rsplit("@", 1)[0] == repository:
            return digest
    raise ReproError(f"the registry gave no digest for {reference}")


def catalog_of_image(reference: str) -> Catalog:
    """The option catalog of the SGLang inside `reference` (a local or pulled image)."""
    with tempfile.TemporaryDirectory(prefix="repro-image-catalog-") as tmp:
        out = Path(tmp)
        out.chmod(0o777)  # the image's user writes there
        command = [
            "docker", "run", "--rm", "--network", "none",
            "--user", f"{os.getuid()}:{os.getgid()}", "--env", "HOME=/tmp",
            "--volume", f"{WRITE_MANIFEST}:/repro/write-manifest.py:ro",
            "--volume", f"{out}:/repro/out",
            "--entrypoint", "python3", reference,
            "/repro/write-manifest.py", "--catalog-only", "--output", "/repro/out/catalog.json",
        ]  # fmt: skip
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=RUN_DEADLINE_S)
        except subprocess.TimeoutExpired:
            raise ReproError(
                f"reading the options of {reference} took over {RUN_DEADLINE_S} s"
            ) from None
        target = out / "catalog.json"
        if result.returncode != 0 or not (target.is_file() or target.is_symlink()):
            lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
            raise ReproError(
                f"{reference}: its SGLang's parser did not import: "
                f"{lines[-1] if lines else 'no output'}",
                hint=f"docker run --rm --entrypoint python3 {reference} -c "
                "'import sglang.srt.server_args' shows why",
            )
        origin = f"the catalog of image {reference}"
        data = fileread.read_json(target, origin, follow_links=False)
    if not isinstance(data, dict):
        raise ReproError(f"{origin}: a {type(data).__name__}, not an SGLang option catalog")
    data["source"] = f"ServerArgs.add_cli_args in image {reference}"
    return Catalog.from_dict(data, origin=origin)
