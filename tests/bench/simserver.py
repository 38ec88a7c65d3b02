"""The SGLang simulator for the bench tests: tiny-chat, seed 0, no load delay."""

from __future__ import annotations

from pathlib import Path

from tests.support.ports import free_port
from tests.support.simulator import Sim

DFLASH = [
    "--speculative-algorithm", "DFLASH",
    "--speculative-draft-model-path", "repro-sim/tiny-chat-dflash",
    "--speculative-num-draft-tokens", "8",
]  # fmt: skip

__all__ = ["DFLASH", "SimServer", "free_port"]


def SimServer(log_path: Path, *args: str, profile: str = "demo", **env: str) -> Sim:
    """A running simulator (the name reads like the class the tests construct)."""
    settings = {"REPRO_SIM_PROFILE": profile, "REPRO_SIM_SEED": "0", "REPRO_SIM_LOAD_SECONDS": "0"}
    return Sim(
        ["--model-path", "repro-sim/tiny-chat", *args], {**settings, **env}, log_path
    ).wait_ready()
