"""A measured interconnect: all-reduce bus bandwidth across the GPUs a deployment will use.

The interconnect class (PCIe vs NVLink) does not say whether a PCIe box's P2P works; an
all-reduce sweep (1 MiB to 1 GiB) does, before a 600 GB weight load. `allreduce_worker.py`
runs one process per GPU with PyTorch distributed (NCCL), either with the host's torch or
inside the deployment's image (which has torch and NCCL). NVLink multicast stays off, as in
every deployment repro starts.

The last probe of a machine's GPUs is kept in repro's cache, so that every machine
fingerprint (and so every run record) carries it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Literal

from repro.errors import ReproError
from repro.fsutil import write_atomic
from repro.schema.machine import PROBE_ENV, InterconnectProbe, ProbePoint, ProbeStatus

MiB = 1 << 20
DEFAULT_SIZES = (MiB, 4 * MiB, 16 * MiB, 64 * MiB, 256 * MiB, 1024 * MiB)
WORKER = Path(__file__).with_name("allreduce_worker.py")


def probe_allreduce(
    gpus: int,
    gpu_uuids: list[str] | None = None,
    *,
    sizes: tuple[int, ...] = DEFAULT_SIZES,
    backend: Literal["nccl", "gloo"] = "nccl",
    image: str | None = None,
    python: str = sys.executable,
    timeout_s: float = 600,
) -> InterconnectProbe:
    """Measure all-reduce bus bandwidth across `gpus` ranks (gloo: CPU processes, for a
    machine without GPUs); with `image`, inside that image (`docker run --gpus`)."""
    unmeasured = InterconnectProbe(
        status="nothing-to-probe",
        message=f"{'no GPU' if gpus == 0 else 'single GPU'}: nothing to probe",
        gpus=gpus,
        gpu_uuids=list(gpu_uuids or []),
        backend=backend,
    )
    if gpus < 2 and backend == "nccl":
        return unmeasured
    args = ["--ranks", str(gpus), "--sizes", ",".join(str(s) for s in sizes)]
    args += ["--backend", backend]
    if image is not None:
        where = f"image {image}"
        ok, output = _run_in_image(image, args, timeout_s)
    else:
        where = f"host python {python}"
        ok, output = _run_on_host(python, args, timeout_s)
    if not ok:
        status: ProbeStatus = "unavailable" if "No module named 'torch'" in output else "failed"
        reason = output.strip().splitlines()[-1] if output.strip() else "no output"
        return unmeasured.model_copy(
            update={"status": status, "message": f"{where}: {reason}", "where": where}
        )
    result = json.loads(output.strip().splitlines()[-1])
    measured = unmeasured.model_copy(
        update={
            "status": "measured",
            "where": where,
            "versions": result["versions"],
            "points": [ProbePoint.model_validate(p) for p in result["points"]],
        }
    )
    return measured.model_copy(update={"message": measured.summary})


def _run_on_host(python: str, args: list[str], timeout_s: float) -> tuple[bool, str]:
    try:
        done = subprocess.run(
            [python, str(WORKER), *args],
            env={**os.environ, **PROBE_ENV},
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        return False, f"timed out after {timeout_s:.0f} s"
    return done.returncode == 0, done.stdout if done.returncode == 0 else done.stderr


def _run_in_image(image: str, args: list[str], timeout_s: float) -> tuple[bool, str]:
    # deferred: python_on_whales, needed only for a probe inside an image
    from python_on_whales import DockerException, docker

    try:
        output = docker.run(
            image,
            ["python3", "-c", WORKER.read_text(), *args],
            remove=True,
            gpus="all",
            ipc="host",
            envs=PROBE_ENV,
            pull="never",
            stop_timeout=int(timeout_s),
        )
    except DockerException as err:
        return False, (err.stderr or err.stdout or str(err))
    return True, str(output)


# --- the last probe of this machine's GPUs ----------------------------------------------------
def _cache_file(gpu_uuids: list[str]) -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "repro"
    key = hashlib.sha256(",".join(sorted(gpu_uuids)).encode()).hexdigest()[:16]
    return cache / f"interconnect-probe-{key}.json"


def save_probe(probe: InterconnectProbe) -> None:
    """Keep a measured probe for later fingerprints of the same GPUs."""
    if probe.status == "measured" and probe.gpu_uuids:
        write_atomic(_cache_file(probe.gpu_uuids), probe.model_dump_json(indent=2) + "\n")


def last_probe(gpu_uuids: list[str]) -> InterconnectProbe | None:
    """The last measured probe of exactly these GPUs, or None."""
    path = _cache_file(gpu_uuids) if gpu_uuids else None
    if path is None or not path.is_file():
        return None
    try:
        return InterconnectProbe.model_validate_json(path.read_text())
    except ValueError as err:
        raise ReproError(
            f"{path}: not a saved interconnect probe ({err})",
            hint="delete it and run `repro doctor --probe` again",
        ) from None
