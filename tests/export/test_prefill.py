"""A locked recipe's server runs with the Hub offline, so the exports first fill each node's
Hub cache with the pinned files: an init container (k8s), a first srun step (Slurm). The
step's own command, run against a local Hub, leaves `snapshots/<sha>` holding those files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from repro.export import SlurmOptions, k8s_manifests, render_slurm
from repro.lock import load_locked
from repro.schema.lock import FileEntry, RepoPin

from .conftest import K8sSchemas, Project, errors_of

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the hubserver package

from hubserver.fixtures import model_files
from hubserver.server import HubServer

REPO = "moonshotai/Kimi-K2.6"


def _pin_for_real(lock: Path, sha: str, files: list[str]) -> None:
    """The lock as `repro lock` leaves it for a real model: its commit and files."""
    data = json.loads(lock.read_text())
    entries = [FileEntry(path=f, size=1, sha256=None) for f in files]
    data["model"] = RepoPin.make(REPO, "main", sha, entries).model_dump(mode="json")
    lock.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def test_k8s_prefills_the_pinned_weights_before_the_offline_server(
    project: Project, k8s_schemas: K8sSchemas, tmp_path: Path
) -> None:
    with HubServer() as hub:
        repo = hub.add_repo(REPO, model_files())
        sha = repo.refs["main"]
        files = ["config.json", "model-00001-of-00001.safetensors"]
        lock = project.lock("kimi26-tp8")
        _pin_for_real(lock, sha, files)
        deployment, _ = k8s_manifests(load_locked(str(lock)))
        assert errors_of(k8s_schemas.validator("Deployment"), deployment) == []
        pod = deployment["spec"]["template"]["spec"]
        [init], [server] = pod["initContainers"], pod["containers"]
        assert {e["name"]: e.get("value") for e in server["env"]}["HF_HUB_OFFLINE"] == "1"
        init_env: dict[str, Any] = {e["name"]: e for e in init["env"]}
        assert init_env["HF_HUB_OFFLINE"]["value"] == "0"
        assert "secretKeyRef" in init_env["HF_TOKEN"]["valueFrom"]
        assert init["image"] == server["image"]
        assert init["volumeMounts"] == [
            m for m in server["volumeMounts"] if m["name"] == "hf-cache"
        ]
        args = [a.replace("$$", "$") for a in init["args"]]
        cache = tmp_path / "hub-cache"
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))},
            "HF_ENDPOINT": hub.endpoint,
            "HF_HUB_CACHE": str(cache),
            "HF_HUB_OFFLINE": "0",
        }
        subprocess.run([sys.executable, *args], env=env, check=True, timeout=120)
    snapshot = next(cache.glob(f"models--*/snapshots/{sha}"))
    assert sorted(p.name for p in snapshot.iterdir()) == sorted(files)


def test_slurm_prefills_on_every_node_first(project: Project) -> None:
    lock = project.lock("kimi26-tp16-2n")
    _pin_for_real(lock, "a" * 40, ["config.json"])
    script = render_slurm(load_locked(str(lock)), SlurmOptions())
    prefill, server = script.index("env HF_HUB_OFFLINE=0 python3 -c"), script.index("bash -c")
    assert prefill < server
    assert script.count("srun --nodes=2 --ntasks=2 --ntasks-per-node=1") == 2
    assert f'"{"a" * 40}"' in script and "snapshot_download" in script
    subprocess.run(["bash", "-n"], input=script, text=True, check=True, timeout=30)
    unlocked = render_slurm(
        load_locked("kimi26-tp16-2n"), SlurmOptions(image=f"r@sha256:{'0' * 64}")
    )
    assert "snapshot_download" not in unlocked  # the server may download: nothing to pre-fill
