"""A real Slurm cluster on 127.0.0.1 for the tests: Debian's munge, slurmctld and two slurmd
daemons (nodes n1 and n2 on one host, each on its own port, `slurmd -N`), run as root in a
temp dir with their own config, ports and munge key; stopped when the block ends."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

TOOLS = ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "sinfo")


@dataclass
class SlurmCluster:
    root: Path
    env: dict[str, str]  # SLURM_CONF for the client commands
    nodes: tuple[str, ...]

    def log(self) -> str:
        """The daemons' logs, for a failing assertion's message."""
        parts = []
        for path in sorted((self.root / "log").glob("*.log")):
            parts.append(f"== {path.name}\n" + "\n".join(path.read_text().splitlines()[-15:]))
        return "\n".join(parts)

    def run_job(self, script: Path, timeout: float = 60) -> tuple[int, str]:
        """Submit the script, wait for the job to end; its exit code and its output file."""
        output = script.with_suffix(".out")
        submitted = subprocess.run(
            ["sbatch", "--parsable", f"--output={output}", f"--chdir={script.parent}", str(script)],
            env=self.env,
            capture_output=True,
            text=True,
        )
        if submitted.returncode != 0:
            return submitted.returncode, submitted.stderr
        job = submitted.stdout.strip().split(";")[0]
        _wait(f"end of job {job}", lambda: self._ended(job), timeout, self.log)
        state = self._job_field(job, "ExitCode")  # "<code>:<signal>"
        return int(state.split(":")[0]), output.read_text() if output.exists() else ""

    def _job_field(self, job: str, field: str) -> str:
        shown = subprocess.run(
            ["scontrol", "-o", "show", "job", job], env=self.env, capture_output=True, text=True
        ).stdout
        pairs = dict(item.split("=", 1) for item in shown.split() if "=" in item)
        return pairs.get(field, "")

    def _ended(self, job: str) -> bool:
        state = self._job_field(job, "JobState")
        return state in {
            "COMPLETED",
            "FAILED",
            "CANCELLED",
            "TIMEOUT",
            "NODE_FAIL",
            "OUT_OF_MEMORY",
        }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _conf(root: Path, nodes: tuple[str, ...], cpus: int) -> str:
    node_lines = [
        f"NodeName={n} NodeHostname=localhost NodeAddr=127.0.0.1 Port={_free_port()} "
        f"CPUs={cpus} RealMemory=256 State=UNKNOWN"
        for n in nodes
    ]
    return "\n".join(
        [
            "ClusterName=reprotest",
            "SlurmctldHost=localhost(127.0.0.1)",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={root}/munge/munge.sock",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"StateSaveLocation={root}/state",
            f"SlurmdSpoolDir={root}/spool-%n",
            f"SlurmctldPidFile={root}/slurmctld.pid",
            f"SlurmdPidFile={root}/slurmd-%n.pid",
            f"SlurmctldLogFile={root}/log/slurmctld.log",
            f"SlurmdLogFile={root}/log/slurmd-%n.log",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SchedulerType=sched/builtin",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "ReturnToService=2",
            "MpiDefault=none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            *node_lines,
            f"PartitionName=test Nodes={','.join(nodes)} Default=YES MaxTime=INFINITE State=UP",
            "",
        ]
    )


def _wait(what: str, check: Callable[[], bool], timeout: float, log: Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"Slurm test cluster: no {what} within {timeout}s\n{log()}")


@contextmanager
def running_slurm(
    root: Path, nodes: tuple[str, ...] = ("n1", "n2"), cpus: int = 2
) -> Iterator[SlurmCluster]:
    missing = [t for t in TOOLS if shutil.which(t) is None]
    assert not missing, (
        f"{', '.join(missing)} missing: `make test` installs Slurm and munge "
        "(scripts/ensure-test-tools)"
    )
    assert os.geteuid() == 0, "the Slurm test cluster runs its daemons as root"
    for folder in ("state", "log", "munge", *(f"spool-{n}" for n in nodes)):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "munge").chmod(0o700)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    conf = root / "slurm.conf"
    conf.write_text(_conf(root, nodes, cpus))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    cluster = SlurmCluster(root, env, nodes)
    munge = root / "munge"
    commands = [
        [
            "munged",
            "--foreground",
            "--force",
            f"--key-file={key}",
            f"--socket={munge / 'munge.sock'}",
            f"--pid-file={munge / 'munged.pid'}",
            f"--log-file={root / 'log' / 'munged.log'}",
            f"--seed-file={munge / 'seed'}",
        ],
        ["slurmctld", "-D", "-i", "-f", str(conf)],
        *(["slurmd", "-D", "-f", str(conf), "-N", n] for n in nodes),
    ]
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for i, command in enumerate(commands):
            processes.append(
                subprocess.Popen(
                    command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                )
            )
            if i == 0:
                _wait("munged socket", (munge / "munge.sock").exists, 15, cluster.log)
        _wait("nodes idle", lambda: _all_idle(cluster), 30, cluster.log)
        yield cluster
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in reversed(processes):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _all_idle(cluster: SlurmCluster) -> bool:
    result = subprocess.run(
        ["sinfo", "-h", "-N", "-o", "%N %T"], env=cluster.env, capture_output=True, text=True
    )
    states = dict(line.split() for line in result.stdout.splitlines() if line.strip())
    return all(states.get(n) == "idle" for n in cluster.nodes)
