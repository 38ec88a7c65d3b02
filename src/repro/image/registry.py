"""Push, pull and verify pinned images; export them for air-gapped and Slurm clusters.

Credentials come only from the Docker credential store (`docker login` beforehand): repro
never takes a password, so none can land in a lock, a log or an image.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

from pydantic import BaseModel
from python_on_whales.exceptions import DockerException

from repro.errors import ReproError
from repro.exitcodes import ExitCode
from repro.image.engine import checked_reference, client, image_exists
from repro.image.fingerprint import content_fingerprint
from repro.image.push_progress import push_with_progress
from repro.progress import Progress, quiet


class RegistryError(ReproError):
    exit_code = ExitCode.REGISTRY


class PushedImage(BaseModel):
    """Where an image now lives in a registry, as the lock records it."""

    reference: str  # host/ns/name:version
    digest: str  # sha256 of the registry manifest
    pinned: str  # host/ns/name@sha256:..., what other clusters pull


def checked_registry(registry: str) -> str:
    """`registry` (host[:port]/namespace), refused, without echoing it, when it carries a
    `user:password@`: repro takes credentials from the Docker credential store only."""
    if "@" in registry:
        raise RegistryError(
            "--registry: a user and password before the host are not accepted there",
            hint="log in with `docker login HOST` first, then give --registry "
            "HOST[:PORT]/NAMESPACE",
        )
    return registry


def remote_reference(local_tag: str, registry: str) -> str:
    """`repro/sim:0.5.23-abc` pushed to `127.0.0.1:5000/team` -> `127.0.0.1:5000/team/sim:...`."""
    repository, version = local_tag.rsplit(":", 1)
    name = repository.split("/")[-1]
    return f"{registry.rstrip('/')}/{name}:{version}"


def remote_config_digest(reference: str) -> str | None:
    """The config digest (= image ID) behind a remote tag, or None when the tag is absent."""
    result = subprocess.run(
        ["docker", "manifest", "inspect", "--insecure", reference], capture_output=True, text=True
    )
    if result.returncode != 0:
        message = (result.stderr or result.stdout).strip()
        if "no such manifest" in message or "manifest unknown" in message:
            return None
        raise _registry_error(reference, message)
    manifest = json.loads(result.stdout)
    config = manifest.get("config") or {}
    return str(config.get("digest")) if config.get("digest") else None


def push(local_tag: str, registry: str, progress: Progress = quiet) -> PushedImage:
    """Push an image, reporting layers and bytes as they go; refuse to move an existing
    version tag to different content."""
    reference = checked_reference(remote_reference(local_tag, registry))  # before any docker call
    if not image_exists(local_tag):
        raise RegistryError(f"image {local_tag} is not on this machine", hint="build it first")
    local_id = client().image.inspect(local_tag).id
    remote_id = remote_config_digest(reference)
    if remote_id is not None and remote_id != local_id:
        raise RegistryError(
            f"{reference} already exists with different content ({remote_id[:19]}, local "
            f"{local_id[:19]}); repro never moves a version tag",
            hint="rebuild with a change in its inputs (that gives a new tag), or push to "
            "another namespace",
        )
    client().image.tag(local_tag, reference)
    progress(f"pushing {reference}")
    code, output = push_with_progress(reference, progress)
    if code != 0:
        raise _registry_error(reference, output)
    digest = _repo_digest(reference)
    repository = reference.rsplit(":", 1)[0]
    return PushedImage(reference=reference, digest=digest, pinned=f"{repository}@{digest}")


def pull(pinned: str) -> str:
    """Pull `repository@sha256:...` and return the local image ID."""
    if "@sha256:" not in checked_reference(pinned):
        raise RegistryError(f"{pinned!r} is not pinned by digest", hint="use repository@sha256:...")
    try:
        client().image.pull(pinned, quiet=True)
    except DockerException as err:
        raise _registry_error(pinned, err.stderr or str(err)) from err
    return str(client().image.inspect(pinned).id)


def verify(image: str, expected_fingerprint: str) -> str:
    """Check that a local image has the locked content; return its fingerprint."""
    if not image_exists(image):
        raise RegistryError(f"image {image} is not on this machine", hint="`repro image pull`")
    actual = content_fingerprint(image)
    if actual != expected_fingerprint:
        raise RegistryError(
            f"image {image} does not match the lock: content fingerprint {actual} != locked "
            f"{expected_fingerprint}",
            hint="this is not the image that was locked; pull it by digest from the lock",
        )
    return actual


def export_archive(image: str, output: Path) -> Path:
    """`docker save` to a tar for machines without registry access (atomic write)."""
    partial = output.with_name(output.name + ".partial")
    try:
        client().image.save(checked_reference(image), output=partial)
        partial.replace(output)
    except (DockerException, OSError) as err:
        partial.unlink(missing_ok=True)
        text = (getattr(err, "stderr", None) or str(err)).strip()
        reason = text.splitlines()[-1] if text else type(err).__name__
        raise RegistryError(
            f"could not write {output}: {reason}",
            hint="check the free space and permissions of the output's directory",
        ) from None
    return output


def enroot_import_command(image: str, output: Path) -> list[str]:
    """The enroot command that turns a local image into a squashfs for pyxis."""
    return ["enroot", "import", "--output", str(output), f"dockerd://{image}"]


def export_enroot(image: str, output: Path) -> tuple[list[str], bool]:
    """Run enroot when it is installed; otherwise return the command for the user to run."""
    command = enroot_import_command(image, output)
    if shutil.which("enroot") is None:
        return command, False
    subprocess.run(command, check=True)
    return command, True


def _repo_digest(reference: str) -> str:
    repository = reference.rsplit(":", 1)[0]
    for repo_digest in client().image.inspect(reference).repo_digests:
        name, _, digest = repo_digest.partition("@")
        if name == repository:
            return digest
    raise RegistryError(f"the engine reported no digest for {reference} after the push")


def _registry_error(reference: str, message: str) -> RegistryError:
    """The engine's last line, classified by what it says of the registry. Every name at the
    reference's registry is left out of what is matched: a port may read "...401", a path
    "unauthorized"."""
    text = message.strip().splitlines()[-1] if message.strip() else "unknown error"
    host = reference.split("/")[0]
    said = re.sub(re.escape(host) + r"\S*", "", text).lower()
    auth_words = ("unauthorized", "authentication required", "no basic auth credentials")
    if any(word in said for word in auth_words) or re.search(r"\b401\b", said):
        return RegistryError(
            f"the registry refused {reference}: {text}",
            hint=f"log in with `docker login {host}` (repro uses the Docker credential store only)",
        )
    if "not found" in said or "manifest unknown" in said:
        return RegistryError(f"{reference} is not in the registry: {text}")
    return RegistryError(f"registry operation on {reference} failed: {text}")
