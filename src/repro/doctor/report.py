"""`repro doctor`: fingerprint this machine and check it against a recipe's requirements."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, Field, computed_field

from repro.doctor.checks import MachineCheck, check_machine
from repro.doctor.fingerprint import MachineFingerprint, collect_fingerprint
from repro.doctor.nccl import NcclAdvice, nccl_advice
from repro.doctor.probe import probe_allreduce, save_probe
from repro.doctor.requirements import Requirements, requirements_from_locked
from repro.doctor.runner import Runner, run_command
from repro.schema.lock import Locked
from repro.schema.machine import InterconnectProbe


class DoctorReport(BaseModel):
    fingerprint: MachineFingerprint
    requirements: Requirements | None = None
    findings: list[MachineCheck] = Field(default_factory=list)
    nccl: NcclAdvice

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        """True when no check failed (warnings allowed)."""
        return not any(f.status == "fail" for f in self.findings)


def diagnose(
    fingerprint: MachineFingerprint, requirements: Requirements | None = None
) -> DoctorReport:
    return DoctorReport(
        fingerprint=fingerprint,
        requirements=requirements,
        findings=check_machine(fingerprint, requirements),
        nccl=nccl_advice(fingerprint.interconnect),
    )


def run_doctor(
    locked: Locked | None = None,
    runner: Runner = run_command,
    env: Mapping[str, str] | None = None,
    *,
    probe: bool = False,
    probe_image: str | None = None,
) -> DoctorReport:
    """Fingerprint this machine and check it against the recipe's requirements (when given;
    a locked recipe's image spec is the one its lock pins). With `probe`, first measure the
    all-reduce bandwidth across the recipe's GPUs (all GPUs without a recipe)."""
    requirements = requirements_from_locked(locked) if locked is not None else None
    repos = [requirements.model_repo] if requirements and requirements.model_repo else []
    fingerprint = collect_fingerprint(runner, env, repos)
    if probe:
        fingerprint.interconnect_probe = probe_interconnect(fingerprint, locked, probe_image)
    return diagnose(fingerprint, requirements)


def probe_interconnect(
    fingerprint: MachineFingerprint, locked: Locked | None = None, image: str | None = None
) -> InterconnectProbe:
    """All-reduce busbw across the GPUs the recipe uses (its `topology.gpus`, else all), in
    `image`, else the lock's image when it has one, else with the host's torch; kept for
    later fingerprints of the same GPUs."""
    uuids = fingerprint.gpu_uuids
    wanted = locked.recipe.topology.gpus if locked is not None else len(uuids)
    uuids = uuids[: min(wanted, len(uuids))] if wanted else uuids
    if image is None and locked is not None and locked.image is not None:
        image = locked.image.run_reference
    result = probe_allreduce(len(uuids), uuids, image=image)
    save_probe(result)
    return result
