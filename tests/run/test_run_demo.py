"""`repro run demo` end to end: real engine, Compose, simulator, bench and report."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from repro.report import load_run
from repro.runfolder import RunFolder
from tests.support.cli import repro
from tests.support.deployments import deployment_containers
from tests.support.ports import free_port

pytestmark = pytest.mark.docker


def test_run_demo_produces_a_record_a_report_and_leaves_nothing_running(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPRO_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("REPRO_LOCKS_DIR", str(tmp_path / "locks"))
    result = repro(
        "run",
        "demo",
        "--runs-dir",
        str(tmp_path / "runs"),
        "--port",
        str(free_port()),
        cwd=repo_root,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    run_dir = Path(result.stdout.strip().splitlines()[-1])
    stages = json.loads(RunFolder(run_dir).stages_file.read_text())["stages"]
    assert [s["status"] for s in stages] == ["done"] * 9

    summary = json.loads(RunFolder(run_dir).bench.summary_file.read_text())
    levels = {level["max_concurrency"]: level for level in summary["levels"]}
    assert sorted(levels) == [1, 4, 16]
    for concurrency, level in levels.items():
        rows = [
            json.loads(line)
            for line in RunFolder(run_dir)
            .bench.requests_file(concurrency, 0)
            .read_text()
            .splitlines()
        ]
        measured = [r for r in rows if r["ok"]]
        tokens = sum(r["completion_tokens"] for r in measured)
        verify_steps = sum(r["spec_verify_ct"] for r in measured)
        assert level["accept_length_pooled"] == pytest.approx(tokens / verify_steps)
    assert levels[16]["output_throughput"] > levels[1]["output_throughput"]
    assert json.loads(RunFolder(run_dir).bench.run_file.read_text())["simulated"] is True
    for concurrency in levels:  # no terminal: the bench stage's plain line per level
        assert re.search(
            rf"c={concurrency} rep=0: done in [\d.]+ s, \d+ tok/s, 0 failed", result.stderr
        )
        assert f"c={concurrency} rep=0: warm-up" in result.stderr
    info = json.loads(RunFolder(run_dir).bench.server_info_file.read_text())
    assert info["image_id"].startswith("sha256:") and info["image_reference"]

    accept = json.loads(RunFolder(run_dir).accept.accept_file.read_text())
    assert {s["prompt_set"] for s in accept["sets"]} == {"chat", "code"}
    html = RunFolder(run_dir).report_html_file.read_text()
    assert "SIMULATED" in html and "data:image/png;base64," in html
    assert "SIMULATED" in RunFolder(run_dir).report_markdown_file.read_text()
    # the machine collected once, by doctor, and the report finds it from bench/
    folder = RunFolder(run_dir)
    assert folder.read_machine() is not None and folder.bench.read_machine() is None
    assert load_run(run_dir).machine == folder.read_machine()
    assert "ready to roll" in folder.server_log_file.read_text()  # kept when the run stopped it
    assert not deployment_containers("demo")


def test_a_gpu_recipe_stops_at_doctor_and_points_to_the_demo(
    repo_root: Path, tmp_path: Path
) -> None:
    result = repro(
        "run",
        "kimi26-ep4-dflash",
        "--runs-dir",
        str(tmp_path / "runs"),
        cwd=repo_root,
        env=dict(os.environ),
    )
    assert result.returncode == 10  # 10 + index of doctor, the first stage
    assert "stage doctor failed" in result.stderr
    assert "repro run kimi26-ep4-dflash --sim" in result.stderr  # the way to run it here
    assert not (tmp_path / "runs").exists()  # nothing ran: no run folder, nor runs/
    assert str(tmp_path / "runs") not in result.stderr  # nor one announced
    assert "Traceback" not in result.stderr


def test_dry_run_prints_the_plan_and_commands_and_starts_nothing(
    repo_root: Path, tmp_path: Path
) -> None:
    result = repro(
        "run",
        "demo",
        "--dry-run",
        "--runs-dir",
        str(tmp_path / "runs"),
        cwd=repo_root,
        env=dict(os.environ),
    )
    assert result.returncode == 0, result.stderr
    for stage in ("doctor", "lock", "image", "fetch", "launch", "accept", "bench", "report"):
        assert f" {stage} " in result.stderr
    assert "$ docker compose -p repro-demo" in result.stderr
    assert "python3 -m sglang.launch_server" in result.stderr
    assert not (tmp_path / "runs").exists()
    assert not deployment_containers("demo")
