"""A two-point campaign on SGLang 0.5.23's own engine (CPU): qwen3-tiny-cpu under two server
settings, each point locked, built, fetched from the local Hub, launched, benched and stopped
for real by `repro campaign run`, then reported."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from hubserver.fixtures import REPRO, Project
from hubserver.repos import HubFile
from hubserver.server import HubServer
from repro.image.tiny_model import TINY_REPO, make_tiny_model
from repro.launch.spec import project_name
from repro.runfolder import RunFolder

pytestmark = [pytest.mark.docker, pytest.mark.timeout(3000)]

REPO_ROOT = Path(__file__).resolve().parents[2]
CAMPAIGN = """
name: tiny-caps
machine: this-cpu
base: qwen3-tiny-cpu
matrix:
  server.max_running_requests: [2, 4]
bench:
  concurrencies: [1, 2]
  input_len: 16
  output_len: 16
  dataset: random
  prompts_per_level: 4
  warmup: 1
slos:
  any: {p99_ttft_ms: 600000}
"""


def test_a_campaign_runs_each_point_on_sglangs_own_engine(tmp_path: Path, hub: HubServer) -> None:
    root = tmp_path / "proj"
    for folder in ("recipes", "images", "patches"):
        shutil.copytree(REPO_ROOT / folder, root / folder)
    project = Project(root=root, hub=hub, cache=root / "hf-cache", home=root / "hf-home")
    files = make_tiny_model(seed=0)
    hub.add_repo(TINY_REPO, [HubFile(path, data) for path, data in files.items()])
    (root / "campaign.yaml").write_text(CAMPAIGN)
    state = root / ".repro"
    result = subprocess.run(
        [str(REPRO), "campaign", "run", "campaign.yaml", "--campaigns-dir", "campaigns"],
        cwd=root,
        env=project.env(REPRO_STATE_DIR=str(state)),
        capture_output=True,
        text=True,
        timeout=2700,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    [folder] = (root / "campaigns").iterdir()
    index = json.loads((folder / "index.json").read_text())
    assert [p["status"] for p in index["points"]] == ["done", "done"]
    for point in index["points"]:
        bench = RunFolder(folder / point["run_dir"]).bench
        info = json.loads(bench.server_info_file.read_text())
        assert info["version"] == "0.5.23" and info["simulated"] is False
        cap = int(point["name"].rsplit("-", 1)[1])
        assert info["max_running_requests"] == cap  # the point's own server setting ran
        levels = json.loads(bench.summary_file.read_text())["levels"]
        assert [lv["max_concurrency"] for lv in levels] == [1, 2]
        assert all(lv["completed"] == 4 for lv in levels)
        containers = subprocess.run(
            ["docker", "ps", "-aq", "--filter",
             f"label=com.docker.compose.project={project_name(point['name'], state)}"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert containers.strip() == ""  # stopped and removed
    report = subprocess.run(
        [str(REPRO), "campaign", "report", str(folder), "--json"],
        cwd=root,
        env=project.env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert report.returncode == 0, report.stderr[-2000:]
    decision = json.loads(report.stdout)["decision"]
    assert decision["slo_winners"][0]["point"] in {p["name"] for p in index["points"]}
