"""The image other clusters pull: pinned by the registry digest the lock recorded.

A manifest never names a tag alone: tags move, digests do not. The digest comes from the
lock's `image` section (written after `repro image push`), or from `--image REPO@sha256:...`
given explicitly. For Slurm, pyxis hands the reference to enroot, which wants its own form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from repro.errors import ReproError
from repro.exitcodes import ExitCode
from repro.recipe.findings import display_path
from repro.schema.lock import Locked

_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_HOST = re.compile(r"^(?:localhost|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*)(?::[0-9]{1,5})?$")
_PATH_COMPONENT = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")

PUSH_HINT = (
    "push the image (`repro image push RECIPE --registry HOST/NS`) so the lock's image section "
    "holds its digest, or pass the pinned reference it prints: --image REPOSITORY@sha256:<digest>"
)


class ExportError(ReproError):
    """A manifest cannot be written as asked (missing digest, bad name, secret inline...)."""

    exit_code = ExitCode.EXPORT


@dataclass(frozen=True)
class PinnedImage:
    """`[registry/]path@sha256:...`; the tag, if one was given, is dropped (the digest wins)."""

    registry: str | None  # host[:port]; None means Docker Hub
    path: str  # ns/name
    digest: str  # sha256:<64 hex>

    @property
    def reference(self) -> str:
        """What Kubernetes and Docker pull: `registry/path@sha256:...`."""
        host = f"{self.registry}/" if self.registry else ""
        return f"{host}{self.path}@{self.digest}"

    @property
    def enroot(self) -> str:
        """The reference pyxis passes on to `enroot import docker://...`.

        enroot separates the registry with `#` and, up to 3.5, parses
        `[USER@][REGISTRY#]IMAGE[:TAG]` only (src/docker.sh, v3.5.0): `@sha256:` and
        `tag@digest` are "Invalid image reference". A digest in the tag position,
        `REGISTRY#IMAGE:sha256:<hex>`, is accepted by 3.x and 4.x alike: both request
        `/v2/IMAGE/manifests/sha256:<hex>`, and 4.x records imports in this very form
        (`docker://${registry}#${image}:${tag}`).
        """
        host = f"{self.registry}#" if self.registry else ""
        return f"{host}{self.path}:{self.digest}"


def parse_pinned(text: str, what: str = "--image") -> PinnedImage:
    """Read `[host[:port]/]path[:tag]@sha256:<hex>`; anything not digest-pinned is refused."""
    name, at, digest = text.strip().partition("@")
    if not at or not _DIGEST.match(digest):
        raise ExportError(
            f"{what} {text!r} is not pinned by digest (expected REPOSITORY@sha256:<64 hex>)",
            hint=PUSH_HINT,
        )
    parts = name.split("/")
    registry = None
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        registry = parts.pop(0)
        if not _HOST.match(registry):
            raise ExportError(f"{what} {text!r}: {registry!r} is not a registry host[:port]")
    last, colon, tag = parts[-1].partition(":")
    if colon and not _TAG.match(tag):
        raise ExportError(f"{what} {text!r}: {tag!r} is not a valid tag")
    parts[-1] = last
    if not all(_PATH_COMPONENT.match(p) for p in parts):
        raise ExportError(
            f"{what} {text!r}: {'/'.join(parts)!r} is not a valid repository path "
            "(lowercase letters, digits, '.', '_', '-', separated by '/')"
        )
    return PinnedImage(registry=registry, path="/".join(parts), digest=digest)


def image_for_export(locked: Locked, explicit: str | None = None) -> PinnedImage:
    """The digest-pinned image of the recipe: `explicit`, else the lock's pushed image."""
    if explicit:
        return parse_pinned(explicit)
    recipe = locked.recipe
    where = display_path(recipe.source_path) if recipe.source_path else recipe.name
    if locked.lock is None:
        raise ExportError(
            f"{where} is a recipe, not a lock: it names no image digest",
            hint=f"export from its lock (locks/{recipe.name}.lock.json) once the image is "
            f"pushed; {PUSH_HINT}",
        )
    image = locked.image
    if image is None or not image.digest:
        raise ExportError(
            f"{where}: the lock has no pushed image digest (image.digest is null)",
            hint=PUSH_HINT,
        )
    if image.pinned:
        return parse_pinned(image.pinned, what=f"{where}: image.pinned")
    repository = image.reference.split("@", 1)[0]
    last = repository.rsplit("/", 1)[-1]
    if ":" in last:
        repository = repository[: len(repository) - len(last)] + last.split(":", 1)[0]
    return parse_pinned(f"{repository}@{image.digest}", what=f"{where}: image")
