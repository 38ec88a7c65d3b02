"""Access to the Docker engine through python-on-whales, with errors that say what to do."""

from __future__ import annotations

import re
from functools import cache

from python_on_whales import DockerClient
from python_on_whales.exceptions import DockerException

from repro.errors import DockerUnavailable, ReproError
from repro.schema.base import IMAGE_REFERENCE_PATTERN

ENSURE_HINT = "run `make docker` (scripts/ensure-docker) to install and start the engine"


@cache
def client() -> DockerClient:
    """The Docker client repro uses, after checking that an engine answers."""
    docker = DockerClient()
    try:
        docker.info()
    except DockerException as err:
        raise DockerUnavailable(
            f"the Docker engine does not answer: {_first_line(err)}", hint=ENSURE_HINT
        ) from err
    return docker


class BadReference(ReproError):
    """A value given as an image reference is not one (it could be read as a docker option)."""


def checked_reference(ref: str) -> str:
    """`ref`, refused unless it has the form of an image reference or ID; for every value
    that reaches a docker call (`--help` is not an image)."""
    if not isinstance(ref, str) or len(ref) > 512 or not re.fullmatch(IMAGE_REFERENCE_PATTERN, ref):
        raise BadReference(
            f"{ref!r} is not an image reference (expected registry/name[:tag][@sha256:...])",
            hint="check the lock's image section, or the reference given",
        )
    return ref


def image_exists(ref: str) -> bool:
    """True when the engine has an image with this reference or ID locally."""
    return bool(client().image.exists(checked_reference(ref)))


def _first_line(err: DockerException) -> str:
    text = (err.stderr or str(err)).strip()
    return text.splitlines()[-1] if text else type(err).__name__
