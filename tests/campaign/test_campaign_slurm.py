"""`repro campaign export slurm` on a real Slurm (munge, slurmctld, two slurmd on 127.0.0.1):
each array task serves its point through the lines `repro export slurm` writes (an srun step;
the simulator from repro's own install, in no container, for these simulated points) and
measures it with `repro run LOCK --url`: no Docker anywhere. `collect` then gives the report
a local `repro campaign run` gives. Everything runs from a directory that is neither the
checkout nor the campaign folder."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.export.slurm_cluster import running_slurm
from tests.support.cli import REPRO, repro

from .demo import BROKEN, demo_campaign, only_folder


def test_a_campaign_runs_as_a_job_array_and_collects_into_a_report(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPRO_STATE_DIR", str(tmp_path / "state"))  # the tasks inherit it
    monkeypatch.setenv("REPRO_LOCKS_DIR", str(tmp_path / "locks"))
    campaigns = tmp_path / "campaigns"
    elsewhere = tmp_path / "elsewhere"  # no recipes/, images/ or locks/ in it
    elsewhere.mkdir()
    exported = repro(
        "campaign",
        "export",
        "slurm",
        str(demo_campaign(tmp_path, repo_root, BROKEN)),
        "--repro",
        REPRO,
        "--max-parallel",
        "1",
        "--base-port",
        str(_free_ports(3)),  # this host may serve something on the recipe's port
        "--campaigns-dir",
        str(campaigns),
        cwd=repo_root,  # the project whose recipes the campaign names; the job runs elsewhere
    )
    assert exported.returncode == 0, exported.stderr[-2000:]
    folder = only_folder(campaigns)
    script = folder / "campaign.sbatch"
    assert "#SBATCH --array=0-2%1" in script.read_text()
    text = script.read_text()
    assert "--exclusive" not in text  # a point holds its GPUs, not the node
    assert "--gpus-per-node" not in text  # simulated points ask for no GPU
    commands = [line for line in text.splitlines() if not line.startswith("#")]
    assert not [line for line in commands if "docker" in line.lower()]
    assert " run " in text and "--url" in text
    small = (folder / "slurm" / "demo.cap-small.sh").read_text()
    assert "exec srun --nodes=1" in small and "sim serve --profile demo" in small
    assert "--container-image" not in small  # the simulator needs no image
    for point in ("demo.cap-small", "demo.cap-big", "demo.cap-broken"):  # locked at export
        assert (folder / "locks" / f"{point}.lock.json").is_file()
    with running_slurm(tmp_path / "slurm") as slurm:
        submitted = subprocess.run(
            ["sbatch", "--parsable", str(script)],
            cwd=elsewhere,
            env=slurm.env,
            capture_output=True,
            text=True,
        )
        assert submitted.returncode == 0, submitted.stderr
        job = submitted.stdout.strip().split(";")[0]
        deadline = time.monotonic() + 500
        while time.monotonic() < deadline and _queued(job, slurm.env):
            time.sleep(2)
        assert not _queued(job, slurm.env), f"the array did not end in time:\n{slurm.log()}"
    assert not list(elsewhere.iterdir())  # the tasks wrote nothing where sbatch was run
    collected = repro("campaign", "collect", str(folder), "--json", cwd=elsewhere)
    assert collected.returncode == 0, collected.stderr[-2000:]
    states = {p["name"]: p for p in json.loads(collected.stdout)["points"]}
    assert states["demo.cap-small"]["status"] == "done"
    assert states["demo.cap-big"]["status"] == "done"
    assert states["demo.cap-broken"]["status"] == "failed"
    reason = str(states["demo.cap-broken"]["reason"])
    assert "stage launch failed: its server exited (code " in reason
    output = folder / reason.rsplit("its output is in ", 1)[1]
    assert "CUDA out of memory" in output.read_text()  # the server's own words, kept
    report = repro("campaign", "report", str(folder), "--json", cwd=elsewhere)
    assert report.returncode == 0, report.stderr[-2000:]
    table = json.loads(report.stdout)["decision"]["table"]
    assert sorted(table["demo.cap-big"]) == ["1", "4"]
    # with 2 running requests at most, c=4 measures a queue: judged invalid, left out
    assert sorted(table["demo.cap-small"]) == ["1"]


def test_a_gpu_campaign_with_sim_asks_for_no_gpu_and_runs_without_docker(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--sim` of a GPU recipe: its simulated twin is made at export, its task asks for no
    GPU and serves the twin with repro's simulator on the node."""
    monkeypatch.setenv("REPRO_LOCKS_DIR", str(tmp_path / "locks"))
    source = tmp_path / "layouts.yaml"
    source.write_text(
        "machine: rtx-pro-6000x8\n"
        "points: [{recipe: kimi26-tp8}]\n"
        "bench: {concurrencies: [1, 2], input_len: 64, output_len: 8, dataset: chat,\n"
        "        prompts_per_level: 4, warmup: 1}\n"
    )
    campaigns = tmp_path / "campaigns"
    exported = repro(
        "campaign", "export", "slurm", str(source), "--sim", "--time-scale", "0.5",
        "--repro", REPRO, "--base-port", str(_free_ports(1)), "--campaigns-dir", str(campaigns),
        cwd=repo_root,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr[-2000:]
    folder = only_folder(campaigns)
    text = (folder / "campaign.sbatch").read_text()
    assert "--gpus-per-node" not in text  # the point's recipe asks for 8; its twin for none
    assert "points/kimi26-tp8/sim-twin/" in text
    with running_slurm(tmp_path / "slurm") as slurm:
        code, output = slurm.run_job(folder / "campaign.sbatch", timeout=300)
    assert code == 0, f"{output}\n{slurm.log()}"
    collected = repro("campaign", "collect", str(folder), "--json", cwd=tmp_path)
    [state] = json.loads(collected.stdout)["points"]
    assert state["status"] == "done", state
    report = repro("campaign", "report", str(folder), "--json", "--no-html", cwd=tmp_path)
    [point] = json.loads(report.stdout)["points"]
    assert point["simulated"] is True and point["gpus"] == 8


def _queued(job: str, env: dict[str, str]) -> bool:
    """Whether any task of the array is still pending or running."""
    shown = subprocess.run(
        ["squeue", "-h", "-j", job, "-o", "%i"], env=env, capture_output=True, text=True
    )
    return bool(shown.stdout.strip())


def _free_ports(count: int) -> int:
    """The first of `count` consecutive ports nothing listens on here."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            first = int(probe.getsockname()[1])
        if first + count <= 65535 and all(_free(first + i) for i in range(count)):
            return first
    raise AssertionError("no free ports")


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
