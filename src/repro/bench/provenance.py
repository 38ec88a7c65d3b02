"""What a bench or accept record notes beyond its measurements, handed in by the caller.

The machine's fingerprint, the image of the deployment that answers at the URL, the port a
recipe's deployment was launched on and the server's last log lines come from the topology
and launch stages, which bench does not import (it only talks HTTP; the layers contract in
pyproject.toml checks it); the lock comes with the `BenchTarget` (repro.bench.target).
`repro.run.provenance.local_provenance()` fills them for `repro bench`, `repro accept` and
`repro run`; the default records none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from repro.schema.machine import MachineInfo, RunningImage


def _no_image(url: str) -> RunningImage | None:
    return None


def _no_log(recipe_name: str) -> list[str]:
    return []


def _no_port(recipe_name: str) -> int | None:
    return None


@dataclass(frozen=True)
class Provenance:
    machine: Callable[[], MachineInfo] | None = None  # machine.json's fingerprint; None: none
    running_image: Callable[[str], RunningImage | None] = _no_image  # of the server at a URL
    server_log: Callable[[str], list[str]] = _no_log  # last lines of a recipe's deployment
    # the host port of the deployment repro launched for a recipe (None: not launched here)
    deployment_port: Callable[[str], int | None] = _no_port
