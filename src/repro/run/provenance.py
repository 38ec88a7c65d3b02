"""The provenance a bench or accept record notes on this machine (see `repro.bench.provenance`):
filled here, above bench, from the topology and launch stages."""

from __future__ import annotations

from repro.bench.provenance import Provenance
from repro.schema.machine import RunningImage
from repro.topology import collect_fingerprint


def _running_image(url: str) -> RunningImage | None:
    from repro.launch.deploy import running_image  # deferred: imports python_on_whales

    return running_image(url)


def _server_log(recipe_name: str) -> list[str]:
    from repro.launch.deploy import RECORDED_LOG_TAIL, log_tail  # deferred: python_on_whales

    return log_tail(recipe_name, RECORDED_LOG_TAIL)


def _deployment_port(recipe_name: str) -> int | None:
    from repro.launch.deploy import load_spec  # deferred: imports python_on_whales

    spec = load_spec(recipe_name)
    return spec.host_port if spec is not None else None


def local_provenance() -> Provenance:
    """Machine fingerprint, running image, server log and deployment port, as `repro bench`
    records them."""
    return Provenance(
        machine=lambda: collect_fingerprint().recorded(),
        running_image=_running_image,
        server_log=_server_log,
        deployment_port=_deployment_port,
    )
