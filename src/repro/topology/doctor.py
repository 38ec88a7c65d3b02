"""`repro doctor`: fingerprint this machine and check it against a recipe's requirements."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field, computed_field

from repro.errors import ReproError
from repro.topology.checks import Finding, check_machine
from repro.topology.fingerprint import MachineFingerprint, collect_fingerprint
from repro.topology.nccl import NcclAdvice, nccl_advice
from repro.topology.requirements import Requirements, requirements_from_recipe
from repro.topology.runner import Runner, run_command


class DoctorReport(BaseModel):
    fingerprint: MachineFingerprint
    requirements: Requirements | None = None
    findings: list[Finding] = Field(default_factory=list)
    nccl: NcclAdvice

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        """True when no check failed (warnings allowed)."""
        return not any(f.status == "fail" for f in self.findings)


def load_requirements(ref: str) -> Requirements:
    """Requirements of recipe `ref` (name, path or lock), via the recipe module."""
    try:
        from repro.recipe import load_recipe  # type: ignore[attr-defined,unused-ignore]
    except ImportError as err:
        raise ReproError(
            f"cannot check against recipe {ref!r}: the recipe module is not in this build ({err})",
            hint="run `repro doctor` without a recipe to check the machine alone",
        ) from err
    recipe: Any = load_recipe(ref)
    return requirements_from_recipe(recipe)


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
    ref: str | None = None,
    runner: Runner = run_command,
    env: Mapping[str, str] | None = None,
) -> DoctorReport:
    """Load `ref`'s requirements (when given), fingerprint this machine and check it."""
    requirements = load_requirements(ref) if ref is not None else None
    return diagnose(collect_fingerprint(runner, env), requirements)
