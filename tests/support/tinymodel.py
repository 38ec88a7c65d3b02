"""The tiny target model and DFlash drafter, made by the project's own generator
(src/repro/realengine/tinymodel.py) in the SGLang Python, once per test session."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.simulator import REPO

GENERATOR = REPO / "src" / "repro" / "realengine" / "tinymodel.py"


def make_tiny_models(out: Path, python: str) -> tuple[Path, Path]:
    """(target, drafter) folders under `out`."""
    target, drafter = out / "target", out / "drafter"
    subprocess.run(
        [python, str(GENERATOR), str(target), "--drafter", str(drafter)],
        check=True,
        timeout=300,
        capture_output=True,
    )
    return target, drafter
