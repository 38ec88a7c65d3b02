"""Time from the server container's exit to repro's error, during a health-gated launch.

The simulator image is started with REPRO_SIM_FAIL_AT_START, so the server exits 1 right
after its (short) load; repro reports how long after the container's FinishedAt it noticed.

    .venv/bin/python benchmarks/launch_failfast.py [RUNS]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from repro.image.locked_image import build_for  # noqa: E402
from repro.launch import LaunchError, launch  # noqa: E402
from repro.launch.from_recipe import launch_spec_for  # noqa: E402
from repro.lock import load_locked  # noqa: E402
from tests.support.ports import free_port  # noqa: E402


def main(runs: int) -> None:
    os.chdir(REPO)
    os.environ["REPRO_STATE_DIR"] = tempfile.mkdtemp(prefix="repro-failfast-")
    locked = load_locked("demo")
    image = build_for(locked).tag
    noticed = []
    for run in range(runs):
        spec = launch_spec_for(locked, image, host_port=free_port())
        spec = spec.model_copy(
            update={
                "name": f"failfast-{run}",
                "env": {**spec.env, "REPRO_SIM_FAIL_AT_START": "1", "REPRO_SIM_LOAD_SECONDS": "1"},
            }
        )
        try:
            launch(spec)
        except LaunchError as err:
            noticed.append(float(err.message.split("noticed ")[1].split(" s")[0]))
    print(
        f"exit -> error over {len(noticed)} launches: median {statistics.median(noticed):.2f} s,"
        f" max {max(noticed):.2f} s (poll interval 0.5 s)"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
