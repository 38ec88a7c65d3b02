"""A point's Kubernetes Job run for real on Docker (tests/support/pod.py, the kubelet's part of
it): the simulator image, pushed to a registry on 127.0.0.1 and named by digest, serves as
the native sidecar; the bench container runs the manifest's own `repro run LOCK --url`
against it through the pod's 127.0.0.1; `collect` then reads the run folder the claim got.

No image with repro in it can be pulled here, so the bench container is the simulator image
with this checkout and its Python mounted read-only at their own paths (`mounts`), and
PYTHONPATH naming the checkout's src (the image's own points at its simulator-only package)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.cli import REPRO, isolated_env, repro
from tests.support.pod import run_pod
from tests.support.registry import docker_login, running_registry

from .demo import demo_campaign, only_folder

pytestmark = pytest.mark.docker
POINT = "demo.cap-small"


def _python_mounts(repo_root: Path) -> list[tuple[Path, str]]:
    """The checkout, its virtual environment and the interpreter it links to."""
    places = {repo_root.resolve(), Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    return [(p, str(p)) for p in sorted(places)]


def test_a_points_job_measures_its_sidecar_server_into_the_claim(
    repo_root: Path, tmp_path: Path, sim_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker-config"))
    with running_registry(tmp_path / "registry") as registry:
        assert docker_login(registry).returncode == 0
        tag = f"{registry.host}/team/sim:pod"
        subprocess.run(["docker", "tag", sim_image, tag], check=True)
        subprocess.run(["docker", "push", tag], check=True, capture_output=True)
        digests = subprocess.run(
            ["docker", "inspect", "-f", "{{json .RepoDigests}}", tag],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
        [pinned] = [d for d in json.loads(digests) if d.startswith(registry.host)]
        try:
            exported = repro(
                "campaign", "export", "k8s", str(demo_campaign(tmp_path, repo_root)),
                "--image", pinned, "--bench-image", pinned, "--results-pvc", "results",
                "--repro", REPRO, "--campaigns-dir", str(tmp_path / "campaigns"),
                cwd=repo_root, env=isolated_env(tmp_path),
            )  # fmt: skip
            assert exported.returncode == 0, exported.stderr[-2000:]
            folder = only_folder(tmp_path / "campaigns")
            docs = list(yaml.safe_load_all((folder / "campaign-k8s.yaml").read_text()))
            maps = {d["metadata"]["name"]: d["data"] for d in docs if d["kind"] == "ConfigMap"}
            [job] = [
                d for d in docs
                if d["kind"] == "Job" and d["metadata"]["annotations"]["repro/point"] == POINT
            ]  # fmt: skip
            claim = tmp_path / "claim"
            claim.mkdir()
            result = run_pod(
                job, maps, {"results": claim}, tmp_path / "pod", deadline_s=420,
                mounts={"bench": _python_mounts(repo_root)},
                env={"bench": {"PYTHONPATH": str(repo_root.resolve() / "src")}},
            )  # fmt: skip
        finally:
            subprocess.run(["docker", "rmi", tag], capture_output=True)
    assert result.exit_code == 0, result.logs.get("bench", "")[-3000:]
    assert "--url: http://127.0.0.1:30000 is not repro's" in result.logs["bench"]
    shutil.copytree(claim / "points", folder / "points", dirs_exist_ok=True)
    collected = repro("campaign", "collect", str(folder), "--json", cwd=repo_root)
    assert collected.returncode == 0, collected.stderr[-2000:]
    states = {p["name"]: p["status"] for p in json.loads(collected.stdout)["points"]}
    assert states == {POINT: "done", "demo.cap-big": "pending"}
    report = repro("campaign", "report", str(folder), "--json", cwd=repo_root)
    assert report.returncode == 0, report.stderr[-2000:]
    table = json.loads(report.stdout)["decision"]["table"]
    assert sorted(table[POINT]) == ["1"]  # c=4 over a cap of 2 measures a queue: invalid
