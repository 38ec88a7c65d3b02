"""Acceptance per drafter repository in a simulator profile, and the lossy fault switch."""

from __future__ import annotations

import pytest

from repro.sim.config import resolve
from repro.sim.profile import load_profile

KIMI = ["--model-path", "moonshotai/Kimi-K2.6", "--speculative-algorithm", "DFLASH",
        "--ep-size", "4", "--tp-size", "8", "--speculative-draft-model-path"]  # fmt: skip


def test_the_two_kimi_drafters_differ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPRO_SIM_PROFILE", "kimi26-ep4-rtx6000")
    monkeypatch.delenv("REPRO_SIM_LOSSY_DRAFTER", raising=False)
    zlab = resolve([*KIMI, "z-lab/Kimi-K2.6-DFlash"])
    # a local snapshot of the repo finds the same entry
    long = resolve([*KIMI, "/models/SubSir/Kimi-K2.6-DFlash-tmp-long"])
    assert zlab.drafter is not None and long.drafter is not None
    assert zlab.drafter.repo == "z-lab/Kimi-K2.6-DFlash"
    assert long.drafter.repo == "SubSir/Kimi-K2.6-DFlash-tmp-long"
    assert zlab.spec is not None and long.spec is not None
    assert zlab.spec.accept_length["math"] > long.spec.accept_length["math"]
    assert zlab.accept_cdfs["math"] != long.accept_cdfs["math"]
    assert not zlab.lossy_drafter
    other = resolve([*KIMI, "someone/else"])  # no entry: the algorithm's numbers
    profile = load_profile("kimi26-ep4-rtx6000")
    assert other.drafter is None and other.spec == profile.spec("DFLASH")


def test_lossy_switch_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPRO_SIM_PROFILE", "kimi26-ep4-rtx6000")
    monkeypatch.setenv("REPRO_SIM_LOSSY_DRAFTER", "1")
    assert resolve([*KIMI, "z-lab/Kimi-K2.6-DFlash"]).lossy_drafter
