"""Every REPRO_* environment variable, named once with its default and what it does.

repro reads its own with `Setting.read`; the SIM_* ones it sets for the simulator, which runs
in its own image, imports nothing of repro and names what it reads itself (repro.sim.config:
tests/test_settings.py checks that it reads each of them); GPU_ARCHS is the image build's
argument. No other module of repro spells a REPRO_* name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Setting:
    name: str
    meaning: str
    default: str | None = None  # None: unset means the caller's own fallback (e.g. PATH)

    def read(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The value in `environ` (default: this process's environment), an empty one counting
        as unset, else the default."""
        value = (os.environ if environ is None else environ).get(self.name)
        return value or self.default

    def text(self, environ: Mapping[str, str] | None = None) -> str:
        """`read`, for a setting that has a default."""
        value = self.read(environ)
        if value is None:
            raise TypeError(f"{self.name} has no default")
        return value


SGLANG_VENV = Path(__file__).resolve().parents[2] / ".venv-sglang"
"""Where scripts/ensure-sglang puts SGLang 0.5.23's CPU engine, in a checkout."""

STATE_DIR = Setting("REPRO_STATE_DIR", "where deployment state lives", ".repro")
RECIPES_DIR = Setting("REPRO_RECIPES_DIR", "the recipes directory (else ./recipes)")
IMAGES_DIR = Setting("REPRO_IMAGES_DIR", "the image specs directory (else beside recipes/)")
LOCKS_DIR = Setting("REPRO_LOCKS_DIR", "the locks directory (else beside recipes/)")
NVIDIA_SMI = Setting("REPRO_NVIDIA_SMI", "the nvidia-smi to run (else PATH's)")
DOCKER = Setting("REPRO_DOCKER", "the docker CLI the doctor runs (else PATH's)")
SGLANG_PYTHON = Setting(
    "REPRO_SGLANG_PYTHON",
    "the Python of SGLang's own engine (scripts/ensure-sglang)",
    str(SGLANG_VENV / "bin" / "python"),
)

SIM_PROFILE = Setting("REPRO_SIM_PROFILE", "the simulator's profile, a name or a path")
SIM_SEED = Setting("REPRO_SIM_SEED", "the simulator's seed")
SIM_TIME_SCALE = Setting("REPRO_SIM_TIME_SCALE", "multiplies every simulated duration")
SIM_LOAD_SECONDS = Setting("REPRO_SIM_LOAD_SECONDS", "the simulator's imitated weight loading")
SIM_SETTINGS = (SIM_PROFILE, SIM_SEED, SIM_TIME_SCALE, SIM_LOAD_SECONDS)

PATCH_CACHE = Setting(
    "REPRO_PATCH_CACHE",
    "where remote patches are kept, named by sha256 (else $XDG_CACHE_HOME/repro/patches, "
    "else ~/.cache/repro/patches)",
)

GPU_ARCHS = Setting("REPRO_GPU_ARCHS", "the CUDA architectures an image build compiles for")
