"""`make test-unit`, the fast tier: it installs and starts neither the Docker engine nor SGLang's
own, and leaves out exactly the tests that need one (marked `docker` or `real_sglang`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_unit_tier_needs_neither_docker_nor_sglang() -> None:
    plan = subprocess.run(
        ["make", "-n", "test-unit"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert plan.returncode == 0, plan.stderr
    assert "ensure-docker" not in plan.stdout and "ensure-sglang" not in plan.stdout
    pytest_line = plan.stdout.strip().splitlines()[-1]
    assert pytest_line.endswith('pytest -m "not docker and not real_sglang"'), plan.stdout
