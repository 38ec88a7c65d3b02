"""The exported sbatch script runs on a real two-node Slurm (munge + slurmctld + two slurmd on
127.0.0.1), and every task's server command receives the node rank from its own task
environment, not a value the batch shell expanded once.

pyxis is not installed, so the `--container-*` lines are removed, and the server is replaced by
tests/export/print_rank.py (through `SlurmOptions.launcher`); everything else is the script
`repro export slurm` writes.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from repro.export import SlurmOptions, render_slurm
from repro.export.common import prepare
from repro.lock import load_locked

from .conftest import Project
from .slurm_cluster import SlurmCluster, running_slurm

PRINT_RANK = Path(__file__).resolve().parent / "print_rank.py"
PYXIS_FLAG = re.compile(r"^\s+--(no-)?container-")  # an srun continuation line of pyxis' flags


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    with running_slurm(tmp_path_factory.mktemp("slurm")) as cluster:
        yield cluster


def _without_pyxis(script: str) -> str:
    """Drop what needs pyxis or GPUs the test nodes lack; keep the rest byte for byte."""
    kept = [
        line
        for line in script.splitlines()
        if not PYXIS_FLAG.search(line) and not line.startswith("#SBATCH --gpus-per-node")
    ]
    return "\n".join(kept) + "\n"


def _reports(output: str) -> list[dict[str, Any]]:
    prefix = "RANK-REPORT "
    return [
        json.loads(line[len(prefix) :]) for line in output.splitlines() if line.startswith(prefix)
    ]


def _value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_each_task_gets_its_own_node_rank(
    project: Project, slurm: SlurmCluster, tmp_path: Path
) -> None:
    locked = load_locked(str(project.lock("kimi26-tp16-2n")))
    script = render_slurm(locked, SlurmOptions(launcher=(sys.executable, str(PRINT_RANK))))
    path = tmp_path / "job.sbatch"
    path.write_text(_without_pyxis(script))
    code, output = slurm.run_job(path)
    assert code == 0, f"{output}\n{slurm.log()}"
    reports = _reports(output)
    assert len(reports) == 2, output
    by_node = {r["task"]["SLURMD_NODENAME"]: r for r in reports}
    assert set(by_node) == {"n1", "n2"}  # one task per node
    for report in reports:
        argv, task = report["argv"], report["task"]
        # The rank each server got is its own task's node index...
        assert _value(argv, "--node-rank") == task["SLURM_NODEID"]
        # ...and all agree on the rendezvous: the allocation's first host.
        assert _value(argv, "--dist-init-addr") == "n1:20000"
        assert _value(argv, "--nnodes") == "2"
    assert sorted(_value(r["argv"], "--node-rank") for r in reports) == ["0", "1"]
    # Apart from the per-node values, the command is the recipe's argv, unchanged.
    expected = prepare(locked, None, 20000).argv(node_rank="RANK", dist_init_addr="ADDR")
    for report in reports:
        argv = report["argv"]
        argv[argv.index("--node-rank") + 1] = "RANK"
        argv[argv.index("--dist-init-addr") + 1] = "ADDR"
        assert argv == expected


def test_a_rank_expanded_by_the_batch_shell_would_be_caught(
    project: Project, slurm: SlurmCluster, tmp_path: Path
) -> None:
    """Control: the same job with "$SLURM_NODEID" outside the single quotes (expanded once,
    by the batch shell on the first node) gives every task rank 0, which the test above
    would reject."""
    locked = load_locked(str(project.lock("kimi26-tp16-2n")))
    script = render_slurm(locked, SlurmOptions(launcher=(sys.executable, str(PRINT_RANK))))
    broken = _without_pyxis(script).replace('"$SLURM_NODEID"', "'\"$SLURM_NODEID\"'")
    assert broken != _without_pyxis(script)
    path = tmp_path / "broken.sbatch"
    path.write_text(broken)
    code, output = slurm.run_job(path)
    assert code == 0, f"{output}\n{slurm.log()}"
    ranks = sorted(_value(r["argv"], "--node-rank") for r in _reports(output))
    assert ranks == ["0", "0"]
