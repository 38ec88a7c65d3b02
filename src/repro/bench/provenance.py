"""What a bench or accept record notes beyond its measurements, handed in by the caller as
values, collected once.

The machine's fingerprint and the image of the deployment that answers at a URL come from
the doctor and launch stages, which bench does not import (it only talks HTTP; the layers
contract in pyproject.toml checks it); the lock comes with the `BenchTarget`
(repro.bench.target). `repro.run.provenance.local_provenance()` collects them for `repro
bench`, `repro accept` and `repro run`; the default records none of them. The server's log is
not bench's to keep: whoever launched the server writes it into the run folder
(`RunFolder.write_server_log`) when a run fails or the server stops.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from repro.schema.machine import MachineInfo
from repro.schema.serverinfo import RunningImage


@dataclass(frozen=True)
class Provenance:
    machine: MachineInfo | None = None  # machine.json; None: the record has none
    images: Mapping[str, RunningImage] = field(default_factory=dict)  # by server URL

    def image(self, url: str) -> RunningImage | None:
        """The image repro's deployment at `url` runs (None: not a deployment repro launched)."""
        return self.images.get(url.rstrip("/"))
