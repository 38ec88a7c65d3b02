"""`repro doctor`: fingerprint this machine and check it against a recipe's requirements."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, Field, computed_field

from repro.spec.lock import Locked
from repro.topology.checks import MachineCheck, check_machine
from repro.topology.fingerprint import MachineFingerprint, collect_fingerprint
from repro.topology.nccl import NcclAdvice, nccl_advice
from repro.topology.requirements import Requirements, requirements_from_recipe
from repro.topology.runner import Runner, run_command


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
) -> DoctorReport:
    """Fingerprint this machine and check it against the recipe's requirements (when given;
    a locked recipe's image spec is the one its lock pins)."""
    requirements = (
        requirements_from_recipe(locked.recipe, lock=locked.lock) if locked is not None else None
    )
    repos = [requirements.model_repo] if requirements and requirements.model_repo else []
    return diagnose(collect_fingerprint(runner, env, repos), requirements)
