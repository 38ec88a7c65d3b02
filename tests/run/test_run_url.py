"""`repro run RECIPE --url URL`: the pipeline against a server repro did not start (what a
Kubernetes pod's bench container runs): the machine, image and server life stages are skipped,
the measurement is the ordinary one, and the server's identity is still checked."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path

from repro.run.pipeline import NOT_WITH_URL
from repro.runfolder import RunFolder
from tests.support.cli import isolated_env, repro
from tests.support.simulator import Simulators

BENCH = (
    "bench: {concurrencies: [1, 2], prompts_per_level: 4, input_len: 32, output_len: 8, warmup: 0}"
)


def _project(root: Path, model: str) -> None:
    (root / "images").mkdir()
    (root / "recipes").mkdir()
    (root / "images/sim.yaml").write_text(
        'base: {image: repro-sim-base, local: true}\nsglang_version: "0.5.23"\nsimulated: true\n'
    )
    (root / "recipes/tiny.yaml").write_text(
        f"image: sim\nmodel: {{repo: {model}}}\ntopology: {{gpus: 0, gpu_runtime: none}}\n"
        f"simulator: {{profile: demo}}\n{BENCH}\n"
    )


def _run(tmp_path: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return repro(
        "run", "recipes/tiny.yaml", "--url", url, "--runs-dir", "runs", *extra,
        cwd=tmp_path, env=isolated_env(tmp_path),
    )  # fmt: skip


def test_a_run_measures_the_server_at_the_url_and_leaves_it_up(
    simulator: Simulators, tmp_path: Path
) -> None:
    _project(tmp_path, "repro-sim/tiny-chat")
    server = simulator.tiny()
    result = _run(tmp_path, server.url, "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    stages = {s["name"]: s for s in json.loads(result.stdout)["stages"]}
    for name in NOT_WITH_URL:
        assert stages[name]["status"] == "skipped", stages[name]
        assert f"--url: {server.url} is not repro's" in stages[name]["summary"]
    assert [stages[n]["status"] for n in ("lock", "bench", "report")] == ["done"] * 3
    folder = RunFolder(tmp_path / json.loads(result.stdout)["run_dir"])
    levels = json.loads(folder.bench.summary_file.read_text())["levels"]
    assert [lv["max_concurrency"] for lv in levels] == [1, 2]
    with urllib.request.urlopen(f"{server.url}/health", timeout=10) as reply:
        assert reply.status == 200  # not stopped: it is not repro's


def test_a_server_of_another_model_fails_the_bench_stage(
    simulator: Simulators, tmp_path: Path
) -> None:
    _project(tmp_path, "repro-sim/other-model")
    server = simulator.tiny()
    result = _run(tmp_path, server.url)
    assert result.returncode != 0
    assert "stage bench failed" in result.stderr and "repro-sim/other-model" in result.stderr
    assert "Traceback" not in result.stderr


def test_url_refuses_the_options_of_a_server_repro_starts(tmp_path: Path) -> None:
    result = repro(
        "run", "demo", "--url", "http://127.0.0.1:9", "--sim", "--keep",
        cwd=tmp_path, env=isolated_env(tmp_path),
    )  # fmt: skip
    assert result.returncode == 2
    assert "--sim, --keep cannot be combined with --url" in result.stderr
