"""`make test-unit`, the fast tier: it installs and starts neither the Docker engine nor SGLang's
own, and leaves out exactly the tests that need one (marked `docker` or `real_sglang`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_unit_tier_needs_neither_docker_nor_sglang() -> None:
    plan = subprocess.run(
        ["make", "--no-print-directory", "-n", "test-unit"],  # also when run under make
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert plan.returncode == 0, plan.stderr
    assert "ensure-docker" not in plan.stdout and "ensure-sglang" not in plan.stdout
    pytest_line = [line for line in plan.stdout.splitlines() if "pytest" in line][-1]
    assert pytest_line.endswith('pytest -m "not docker and not real_sglang"'), plan.stdout
