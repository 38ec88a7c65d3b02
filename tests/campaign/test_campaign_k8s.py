"""`repro campaign export k8s`: one ConfigMap (the point's lock) and one Job per point, each
valid against Kubernetes' own schema of the first release with native sidecars (1.29) and of
a current one, the server on the lock's exact argv and the bench container measuring it
through `repro run --url`. No cluster runs here; tests/campaign/test_campaign_pod.py runs a
Job's pod on Docker."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from repro.lock import load_locked
from repro.recipe.render import render_server_argv
from tests.support.cli import isolated_env, repro

from .demo import demo_campaign, only_folder

DIGEST = "sha256:" + "ab" * 32
SERVER_IMAGE = f"127.0.0.1:5000/team/sim@{DIGEST}"
BENCH_IMAGE = f"127.0.0.1:5000/team/repro@{DIGEST}"


def export(tmp_path: Path, repo_root: Path, *extra: str) -> Any:
    return repro(
        "campaign", "export", "k8s", str(demo_campaign(tmp_path, repo_root)),
        "--image", SERVER_IMAGE, "--bench-image", BENCH_IMAGE, "--results-pvc", "results",
        "--campaigns-dir", str(tmp_path / "campaigns"), *extra,
        cwd=repo_root, env=isolated_env(tmp_path),
    )  # fmt: skip


def test_each_point_is_a_valid_job_running_its_locked_server_and_a_bench(
    tmp_path: Path, repo_root: Path
) -> None:
    result = export(tmp_path, repo_root, "--namespace", "bench")
    assert result.returncode == 0, result.stderr[-2000:]
    folder = only_folder(tmp_path / "campaigns")
    docs = list(yaml.safe_load_all((folder / "campaign-k8s.yaml").read_text()))
    for doc in docs:
        for version in ("1.29", "1.33"):
            kubernetes_validate.validate(doc, version, strict=True)
    jobs = {d["metadata"]["annotations"]["repro/point"]: d for d in docs if d["kind"] == "Job"}
    assert sorted(jobs) == ["demo.cap-big", "demo.cap-small"]
    maps = {d["metadata"]["name"]: d["data"] for d in docs if d["kind"] == "ConfigMap"}
    for point, job in jobs.items():
        pod = job["spec"]["template"]["spec"]
        [server] = pod["initContainers"]
        assert server["restartPolicy"] == "Always" and server["image"] == SERVER_IMAGE
        assert server["startupProbe"]["httpGet"]["path"] == "/health_generate"
        lock_file = folder / "locks" / f"{point}.lock.json"
        locked = load_locked(str(lock_file))
        assert server["args"] == render_server_argv(locked.served, locked.need_catalog())
        [bench] = pod["containers"]
        assert bench["image"] == BENCH_IMAGE
        assert bench["args"] == [
            "run", f"/campaign/locks/{point}.lock.json", "--url", "http://127.0.0.1:30000",
            "--runs-dir", f"/results/points/{point}",
        ]  # fmt: skip
        shipped = maps[job["metadata"]["name"]][lock_file.name]
        full = json.loads(lock_file.read_text())
        assert full["catalog"] and json.loads(shipped) == {**full, "catalog": None}
        assert job["metadata"]["namespace"] == "bench"
    # `kubectl apply` keeps each object as JSON in a 262,144-byte annotation: far below it
    for doc in (d for d in docs if d["kind"] == "ConfigMap"):
        assert len(json.dumps(doc).encode()) < 16 * 1024
    big = jobs["demo.cap-big"]["spec"]["template"]["spec"]["initContainers"][0]["args"]
    assert big[big.index("--max-running-requests") + 1] == "16"


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--bench-image", "127.0.0.1:5000/team/repro:latest", "is not pinned by digest"),
        ("--results-pvc", "Results Claim", "is not a DNS-1123 subdomain"),
        ("--namespace", "a\nb", "is not a DNS-1123 label"),
    ],
)
def test_a_bad_value_is_refused_before_any_folder_is_made(
    tmp_path: Path, repo_root: Path, option: str, value: str, says: str
) -> None:
    result = export(tmp_path, repo_root, option, value)
    assert result.returncode != 0
    assert says in result.stderr and "Traceback" not in result.stderr
    campaigns = tmp_path / "campaigns"
    assert not campaigns.exists() or not any(campaigns.iterdir())
