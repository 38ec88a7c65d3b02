"""Access to the Docker engine through python-on-whales, with errors that say what to do."""

from __future__ import annotations

from functools import cache

from python_on_whales import DockerClient
from python_on_whales.exceptions import DockerException

from repro.errors import DockerUnavailable

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


def image_exists(ref: str) -> bool:
    """True when the engine has an image with this reference or ID locally."""
    return bool(client().image.exists(ref))


def _first_line(err: DockerException) -> str:
    text = (err.stderr or str(err)).strip()
    return text.splitlines()[-1] if text else type(err).__name__
