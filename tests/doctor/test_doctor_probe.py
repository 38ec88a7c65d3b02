"""`repro doctor --probe`: all-reduce bus bandwidth, measured for real (gloo on CPU ranks here;
NCCL across GPUs on a GPU machine), and what a machine with fewer than two GPUs reports."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.doctor.probe import last_probe, probe_allreduce, save_probe
from repro.schema.machine import PROBE_ENV


def test_two_ranks_measure_bus_bandwidth_as_nccl_tests_defines_it() -> None:
    probe = probe_allreduce(2, ["GPU-a", "GPU-b"], sizes=(1 << 20, 4 << 20), backend="gloo")
    assert probe.status == "measured", probe.message
    assert [p.size_bytes for p in probe.points] == [1 << 20, 4 << 20]
    for point in probe.points:
        assert point.time_us > 0
        assert point.algbw_gbps == pytest.approx(point.size_bytes / point.time_us / 1e3)
        assert point.busbw_gbps == pytest.approx(point.algbw_gbps * 2 * (2 - 1) / 2)
    assert probe.versions["torch"].startswith("2.")
    assert probe.env == PROBE_ENV  # NVLink multicast off in the probe's own environment
    assert "busbw" in probe.message and "GB/s" in probe.message


@pytest.mark.parametrize(("gpus", "said"), [(0, "no GPU"), (1, "single GPU")])
def test_fewer_than_two_gpus_have_nothing_to_probe(gpus: int, said: str) -> None:
    probe = probe_allreduce(gpus, ["GPU-a"][:gpus])
    assert (probe.status, probe.message) == ("nothing-to-probe", f"{said}: nothing to probe")
    assert probe.points == []


def test_a_python_without_torch_says_so(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    import venv

    venv.create(bare, with_pip=False)
    probe = probe_allreduce(
        2, [], sizes=(1 << 20,), backend="gloo", python=str(bare / "bin/python")
    )
    assert probe.status == "unavailable"
    assert "No module named 'torch'" in probe.message


def test_the_last_probe_of_the_same_gpus_is_kept(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    probe = probe_allreduce(2, ["GPU-a", "GPU-b"], sizes=(1 << 20,), backend="gloo")
    save_probe(probe)
    assert last_probe(["GPU-b", "GPU-a"]) == probe
    assert last_probe(["GPU-a"]) is None  # another set of GPUs: another measurement


def test_doctor_probe_on_this_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    result = CliRunner().invoke(main, ["doctor", "--probe", "--json"])
    report = json.loads(result.output)
    probe = report["fingerprint"]["interconnect_probe"]
    gpus = len(report["fingerprint"]["gpus"])
    if gpus < 2:
        assert probe["status"] == "nothing-to-probe"
        assert probe["message"].endswith("nothing to probe")
    else:
        assert probe["status"] == "measured", probe["message"]
    text = CliRunner().invoke(main, ["doctor", "--probe"]).output
    assert "Interconnect probe" in text


def test_worker_runs_standalone_as_an_image_would_run_it() -> None:
    """Inside an image repro is not installed: the worker is passed as `python3 -c SOURCE`."""
    import subprocess

    from repro.doctor.probe import WORKER

    args = ["--ranks", "2", "--sizes", "1048576", "--backend", "gloo", "--iters", "2"]
    done = subprocess.run(
        [sys.executable, "-c", WORKER.read_text(), *args], capture_output=True, text=True, cwd="/"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["points"][0]["size_bytes"] == 1048576


def test_a_real_single_gpu_host_reports_nothing_to_probe(fixtures_dir: Path) -> None:
    """`repro doctor --probe --json` as it ran on a lent single-H200 machine."""
    from repro.doctor import DoctorReport

    data = json.loads((fixtures_dir / "gpu" / "doctor_probe_h200x1.json").read_text())
    data.pop("recipe")
    report = DoctorReport.model_validate(data)
    fingerprint = report.fingerprint
    assert fingerprint.interconnect.value == "single-gpu"
    assert [g.name for g in fingerprint.gpus] == ["NVIDIA H200"]
    probe = fingerprint.interconnect_probe
    assert probe is not None and probe.status == "nothing-to-probe"
    assert probe.message == "single GPU: nothing to probe"
    assert probe.gpu_uuids == fingerprint.gpu_uuids
