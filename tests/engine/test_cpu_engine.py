"""Recipe qwen3-tiny-cpu through the whole pipeline on SGLang 0.5.23's own engine (CPU).

The tiny model is made in the CPU base image and published on the local Hub; `repro lock`
pins its commit, then `main` moves to a commit with another context length. The image is
built through Dockerfile.sglang like a GPU image; `repro fetch` downloads the locked commit;
the server, launched through Compose from the lock with the Hub offline, must have loaded that
commit (its context length, and SGLang's own log line naming the snapshot) and not `main`.
Then a bench on both endpoints and the report, a request-rate ladder and a replay of the
shipped trace. One test: the server takes a minute to start.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from hubserver.fixtures import REPRO, Project
from hubserver.repos import HubFile
from hubserver.server import HubServer
from repro.image.tiny_model import TINY_REPO, make_tiny_model
from repro.runfolder import RunFolder
from tests.support.ports import free_port

pytestmark = [pytest.mark.docker, pytest.mark.timeout(3000)]

REPO_ROOT = Path(__file__).resolve().parents[2]
RECIPE = "qwen3-tiny-cpu"
MOVED_CONTEXT = 1024  # the context length of the commit `main` moves to after the lock


def _run(project: Project, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(REPRO), *args],
        cwd=project.root,
        env=project.env(REPRO_STATE_DIR=str(project.root / ".repro")),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, f"repro {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


@pytest.fixture
def project(tmp_path: Path, hub: HubServer) -> Project:
    root = tmp_path / "proj"
    for folder in ("recipes", "images", "patches"):
        shutil.copytree(REPO_ROOT / folder, root / folder)
    return Project(root=root, hub=hub, cache=root / "hf-cache", home=root / "hf-home")


def test_the_tiny_recipe_serves_its_locked_commit_on_sglangs_own_engine(
    project: Project, hub: HubServer
) -> None:
    files = make_tiny_model(seed=0)
    assert make_tiny_model(seed=0) == files  # deterministic: the same commit on every machine
    repo = hub.add_repo(TINY_REPO, [HubFile(path, data) for path, data in files.items()])
    locked_context = json.loads(files["config.json"])["max_position_embeddings"]

    _run(project, "lock", RECIPE)
    lock_path = project.root / "locks" / f"{RECIPE}.lock.json"
    locked_sha = json.loads(lock_path.read_text())["model"]["sha"]
    assert locked_sha == repo.resolve("main")
    moved = json.loads(files["config.json"]) | {"max_position_embeddings": MOVED_CONTEXT}
    repo.commit(
        [HubFile(p, d) for p, d in files.items() if p != "config.json"]
        + [HubFile("config.json", json.dumps(moved).encode())]
    )
    assert repo.resolve("main") != locked_sha

    built = _run(project, "image", "build", RECIPE, timeout=2400)
    assert "sglang       0.5.23 (real)" in built.stdout
    assert "no drift from the shipped sglang-0.5.23.json" in built.stderr
    image = json.loads(lock_path.read_text())["image"]
    wheels = {w["name"]: w for w in image["manifest"]["wheels"]}
    assert wheels["sglang"]["version"] == "0.5.23" and len(wheels["sglang"]["sha256"]) == 64

    _run(project, "fetch", RECIPE)
    port = free_port()
    _run(project, "launch", RECIPE, "--port", str(port), timeout=900)
    url = f"http://127.0.0.1:{port}"
    try:
        [model] = _get(f"{url}/v1/models")["data"]
        assert model["max_model_len"] == locked_context != MOVED_CONTEXT
        info = _get(f"{url}/server_info")
        assert info["revision"] == locked_sha and info["version"] == "0.5.23"
        log = _run(project, "logs", RECIPE, "--tail", "all").stdout
        assert f"snapshots/{locked_sha}" in log  # weight_utils.py: "Found local HF snapshot"
        records = []
        for endpoint in ("generate", "chat"):
            out = project.root / "runs" / endpoint
            _run(project, "bench", RECIPE, "--url", url, "--endpoint", endpoint,
                 "--output", str(out), timeout=900)  # fmt: skip
            served = json.loads(RunFolder(out).server_info_file.read_text())
            assert served["version"] == "0.5.23" and served["simulated"] is False
            records.append(str(out))
        report = _run(project, "report", *records).stdout
        assert "SIMULATED" not in report
        _open_loop_levels(project, url)
    finally:
        _run(project, "stop", RECIPE)


def _open_loop_levels(project: Project, url: str) -> None:
    """A rate ladder with bursts and a trace replay on the real engine: each level records
    its schedule and achieved rate, and the trace's shared blocks hit SGLang's radix cache."""
    runs = project.root / "runs"
    _run(project, "bench", RECIPE, "--url", url, "--request-rate", "2,4,8", "--burstiness",
         "0.5", "--output", str(runs / "rates"), timeout=900)  # fmt: skip
    _run(project, "bench", RECIPE, "--url", url, "--trace", "demo", "--prompts", "8",
         "--output", str(runs / "trace"), timeout=900)  # fmt: skip
    for name, labels in (("rates", ["r=2/s", "r=4/s", "r=8/s"]), ("trace", ["trace 1x"])):
        folder = RunFolder(runs / name)
        levels = folder.read_summary().levels
        assert [lv.load.label for lv in levels] == labels
        for level in levels:
            assert level.arrival is not None and (level.arrival.achieved_rate or 0) > 0
            rows = folder.read_requests(level.load, level.repeat)
            assert all(r.ok and r.offered_s is not None for r in rows)
    rows = RunFolder(runs / "trace").read_requests(levels[0].load, 0)
    assert any(r.cached_tokens >= 512 for r in rows[1:])  # a block another request sent
