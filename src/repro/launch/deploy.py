"""Launch, watch and stop a deployment with Docker Compose.

`launch` is health-gated: it returns once `/health_generate` answers 200, and fails fast (one
poll interval after the container exits) with the container's exit code and last log lines.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from python_on_whales import Container
from python_on_whales.exceptions import DockerException

from repro.errors import DockerUnavailable, ReproError
from repro.exitcodes import ExitCode
from repro.fsutil import write_atomic
from repro.image.engine import client, image_exists
from repro.interrupts import signals_ignored
from repro.launch.claim import deployment_claim
from repro.launch.compose import compose_client, compose_command, write_override
from repro.launch.spec import SERVICE, LaunchSpec, state_dir
from repro.schema.serverinfo import RunningImage
from repro.urls import http_status

POLL_INTERVAL_S = 0.5
LOG_TAIL = 30
RECORDED_LOG_TAIL = 2000  # lines kept in a run folder: a crash's traceback and what led to it
SPEC_NAME = "deployment.json"


class LaunchError(ReproError):
    """The server did not come up."""

    exit_code = ExitCode.LAUNCH


@dataclass
class HealthPoll:
    """What the health wait reports on every poll (its own shape: a state and a log line,
    not a `repro.progress.Progress` line)."""

    elapsed_s: float
    state: str
    last_log_line: str


def state_root() -> Path:
    return state_dir() / "deployments"


def deployment_dir(name: str) -> Path:
    return state_root() / name


def prepare_deployment(spec: LaunchSpec) -> tuple[Path, list[str]]:
    """Write the override and return it with the exact `docker compose up` command."""
    override = write_override(spec, deployment_dir(spec.name))
    write_atomic(deployment_dir(spec.name) / SPEC_NAME, spec.model_dump_json(indent=2))
    return override, compose_command(spec.project, override, "up", "-d", "--pull", "never")


def launch(spec: LaunchSpec, on_progress: Callable[[HealthPoll], None] = lambda _p: None) -> str:
    """Start the deployment and wait until it is healthy; return the server URL.

    Anything started is stopped again when the wait fails or is interrupted (Ctrl-C). The
    deployment's claim is held throughout, so a second launch of it is refused before it
    can start anything (or take this one down in its clean-up).
    """
    with deployment_claim(deployment_dir(spec.name), spec.name):
        _preflight(spec)
        override, _command = prepare_deployment(spec)
        compose = compose_client(spec.project, override)
        try:
            try:
                compose.compose.up(detach=True, pull="never", quiet=True)
            except DockerException as err:
                message = _tail(err.stderr or str(err), 5)
                raise LaunchError(f"docker compose up failed: {message}") from err
            _wait_healthy(spec, on_progress)
        except BaseException:  # a failed start, a timeout or Ctrl-C: leave nothing behind
            with signals_ignored():  # a second signal does not cut the clean-up short
                compose.compose.down(quiet=True, timeout=5)
            raise
    return spec.url


def running_container_id(name: str) -> str | None:
    """The ID of deployment `name`'s server container while it runs, else None: what a run
    records as the server it started, and checks before it reuses or stops one."""
    spec = load_spec(name)
    container = container_of(spec) if spec is not None else None
    return str(container.id) if container is not None and container.state.running else None


def stop(name: str, container_id: str | None = None) -> bool:
    """Stop and remove a deployment's containers; False when there was nothing to stop.
    With `container_id`, only when that container is the deployment's server: a run stops
    the server it started, never one launched since in its place."""
    spec = load_spec(name)
    if spec is None:
        return False
    if container_id is not None and running_container_id(name) not in (container_id, None):
        return False
    override = deployment_dir(name) / "compose.override.yaml"
    compose_client(spec.project, override).compose.down(quiet=True, timeout=10)
    return True


def load_spec(name: str) -> LaunchSpec | None:
    path = deployment_dir(name) / SPEC_NAME
    if not path.exists():
        return None
    return LaunchSpec.model_validate_json(path.read_text())


def known_deployments() -> list[str]:
    root = state_root()
    return (
        sorted(p.name for p in root.iterdir() if (p / SPEC_NAME).exists()) if root.exists() else []
    )


def running_image(url: str) -> RunningImage | None:
    """The image of the running deployment repro launched at `url` (`deployment`,
    `image_reference` as launched, `image_id` the container runs), or None when repro did not
    launch what answers there: a bench record says which image it measured, whatever started
    the server."""
    wanted = _loopback_port(url)
    for name in known_deployments():
        spec = load_spec(name)
        if spec is None or wanted is None or spec.host_port != wanted:
            continue
        try:
            container = container_of(spec)
        except (DockerException, DockerUnavailable):  # no engine: the image stays unrecorded
            return None
        if container is not None and container.state.running:
            return RunningImage(
                deployment=name, image_reference=spec.image, image_id=container.image
            )
    return None


def _loopback_port(url: str) -> int | None:
    """The port of a URL on this machine (deployments publish on 127.0.0.1), else None."""
    parts = urlsplit(url)
    if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        return None
    return parts.port


def container_of(spec: LaunchSpec) -> Container | None:
    """The deployment's server container, running or exited, if it exists."""
    found = client().container.list(
        all=True,
        filters=[
            ("label", f"com.docker.compose.project={spec.project}"),
            ("label", f"com.docker.compose.service={SERVICE}"),
        ],
    )
    return found[0] if found else None


def status(name: str) -> dict[str, object]:
    """Container state, health and URL of a deployment, for `repro status`."""
    spec = load_spec(name)
    if spec is None:
        raise ReproError(f"no deployment named {name!r}", hint="see `repro status` for the list")
    container = container_of(spec)
    state = container.state if container else None
    return {
        "name": name,
        "image": spec.image,
        "url": spec.url,
        "container": container.name if container else None,
        "status": state.status if state else "absent",
        "exit_code": state.exit_code if state and state.status == "exited" else None,
        "health": state.health.status if state and state.health else None,
        "server_healthy": http_status(f"{spec.url}/health_generate", timeout=10) == 200,
    }


def log_tail(name: str, count: int = LOG_TAIL) -> list[str]:
    """Deployment `name`'s last `count` server log lines; [] when it has no container."""
    spec = load_spec(name)
    container = container_of(spec) if spec else None
    return last_log_lines(container, count) if container else []


def last_log_lines(container: Container, count: int = LOG_TAIL) -> list[str]:
    try:
        text = client().container.logs(container, tail=count)
    except DockerException:
        return []
    return [line for line in str(text).splitlines() if line.strip()]


def _preflight(spec: LaunchSpec) -> None:
    if not image_exists(spec.image):
        raise LaunchError(
            f"image {spec.image} is not on this machine",
            hint="build it with `repro image build RECIPE` or pull it with `repro image pull`",
        )
    for what, snapshot in spec.required_snapshots.items():
        if not snapshot.is_dir():
            raise LaunchError(
                f"the model snapshot {what} is not in the Hub cache ({snapshot})",
                hint=f"download it first: `repro fetch {spec.name}` (or set HF_HUB_CACHE to "
                "the cache that holds it)",
            )
    existing = container_of(spec)
    if existing is not None and existing.state.running:
        raise LaunchError(
            f"deployment {spec.name!r} is already running ({existing.name})",
            hint=f"stop it first: `repro stop {spec.name}`",
        )
    if _port_in_use(spec.host_port):
        raise LaunchError(
            f"port {spec.host_port} on 127.0.0.1 is already in use",
            hint="stop what listens there, or set another server port in the recipe "
            "(server.port) or with --port",
        )


def _wait_healthy(spec: LaunchSpec, on_progress: Callable[[HealthPoll], None]) -> None:
    start = time.monotonic()
    container = container_of(spec)
    while True:
        elapsed = time.monotonic() - start
        if container is None:
            container = container_of(spec)
        if container is not None:
            container.reload()
            state = container.state
            if state.status in ("exited", "dead"):
                lines = last_log_lines(container)
                noticed = _seconds_since(state.finished_at)
                raise LaunchError(
                    f"the server container exited with code {state.exit_code} after "
                    f"{elapsed:.1f} s (noticed {noticed:.2f} s after the exit); its last log "
                    "lines:\n    " + "\n    ".join(lines[-15:]),
                    hint=f"full log: `docker logs {container.name}`",
                )
        if http_status(f"{spec.url}/health_generate", timeout=10) == 200:
            return
        if elapsed > spec.health_timeout_s:
            raise LaunchError(
                f"the server was not healthy after {spec.health_timeout_s:.0f} s "
                f"({spec.url}/health_generate)",
                hint="weight loading may need longer: raise the health timeout, and check "
                "`repro logs`",
            )
        last = last_log_lines(container, 1) if container is not None else []
        on_progress(
            HealthPoll(
                elapsed,
                (container.state.status if container else None) or "creating",
                last[-1] if last else "",
            )
        )
        time.sleep(POLL_INTERVAL_S)


def _seconds_since(moment: datetime | None) -> float:
    if moment is None:
        return float("nan")
    return (datetime.now(UTC) - moment.astimezone(UTC)).total_seconds()


def host_port_for(preferred: int) -> int:
    """`preferred` when it is free on 127.0.0.1, else a free port the system picks (another
    checkout's deployment may hold the recipe's port on a shared machine)."""
    if not _port_in_use(preferred):
        return preferred
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As servers (and docker-proxy) do: connections of a previous server lingering in
        # TIME_WAIT do not make the port busy; a listener does.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _tail(text: str, count: int) -> str:
    return "\n".join(text.strip().splitlines()[-count:])
