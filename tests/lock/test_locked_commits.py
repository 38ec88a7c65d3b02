"""The locked commits reach the wire: everything a lock renders, launches or exports names the
locked SHAs and runs with the Hub offline, and the cache `repro fetch` fills serves them so.

The lock is made against the local Hub (real commit SHAs, not `main`); the offline check runs
huggingface_hub itself, which SGLang's loaders call with `revision=` the server's `--revision`
and `local_files_only=HF_HUB_OFFLINE` (sglang/srt/model_loader/weight_utils.py).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from hubserver.fixtures import Project
from repro.launch.compose import render_override
from repro.launch.from_recipe import launch_spec_for
from repro.lock import load_locked, with_lock

IMAGE = "127.0.0.1:5000/team/sglang@sha256:" + "ab" * 32


def _option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def _pinned(project: Project) -> tuple[str, str]:
    project.lock()
    lock = json.loads(project.lock_path().read_text())
    model, drafter = lock["model"]["sha"], lock["drafter"]["sha"]
    assert model == project.model.resolve("main") and drafter == project.drafter.resolve("main")
    return model, drafter


def _assert_served_pinned(argv: list[str], env: dict[str, str], shas: tuple[str, str]) -> None:
    assert _option(argv, "--revision") == shas[0]
    assert _option(argv, "--speculative-draft-model-revision") == shas[1]
    assert "main" not in argv
    assert env["HF_HUB_OFFLINE"] == "1"


def test_render_of_a_lock_names_the_locked_commits(project: Project) -> None:
    shas = _pinned(project)
    lock = str(project.lock_path())
    rendered = project.repro("recipe", "render", lock, "--format", "json")
    assert rendered.returncode == 0, rendered.stderr
    data = json.loads(rendered.stdout)
    _assert_served_pinned(data["argv"], data["env"], shas)
    shell = project.repro("recipe", "render", lock).stdout
    assert f"--revision {shas[0]}" in shell and shell.startswith("HF_HUB_OFFLINE=1 ")
    # The recipe file itself still asks for `main` and renders it: nothing is pinned yet.
    unlocked = json.loads(project.repro("recipe", "render", "small", "--format", "json").stdout)
    assert _option(unlocked["argv"], "--revision") == "main"
    assert "HF_HUB_OFFLINE" not in unlocked["env"]


def test_launch_from_a_lock_runs_the_locked_commits_offline(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    shas = _pinned(project)
    monkeypatch.setenv("HF_HUB_CACHE", str(project.cache))
    # The lock file, or the recipe with the lock `repro run small` finds for it.
    for locked in (load_locked(str(project.lock_path())), with_lock(load_locked("small"))):
        spec = launch_spec_for(locked, IMAGE)
        service = render_override(spec)["services"]["sglang"]
        _assert_served_pinned(service["command"], service["environment"], shas)
        assert set(spec.required_snapshots.values()) == {
            project.cache / f"models--org--{name}" / "snapshots" / sha
            for name, sha in zip(("model", "drafter"), shas, strict=True)
        }
    # `repro launch small` after `repro lock small` launches what the lock pins.
    dry_run = project.repro("launch", "small", "--dry-run", REPRO_STATE_DIR=str(project.root))
    assert dry_run.returncode == 0, dry_run.stderr
    override = yaml.safe_load(dry_run.stdout.split("\ndocker compose")[0])
    service = override["services"]["sglang"]
    _assert_served_pinned(service["command"], service["environment"], shas)


def test_k8s_and_slurm_exports_name_the_locked_commits(project: Project) -> None:
    shas = _pinned(project)
    lock = str(project.lock_path())
    k8s = project.repro("export", "k8s", lock, "--image", IMAGE)
    assert k8s.returncode == 0, k8s.stderr
    container = next(yaml.safe_load_all(k8s.stdout))["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    _assert_served_pinned(container["args"], {k: v for k, v in env.items() if v}, shas)
    slurm = project.repro("export", "slurm", lock, "--image", IMAGE)
    assert slurm.returncode == 0, slurm.stderr
    assert "export HF_HUB_OFFLINE=1" in slurm.stdout.splitlines()
    assert f"--revision {shas[0]}" in slurm.stdout
    assert f"--speculative-draft-model-revision {shas[1]}" in slurm.stdout


_LOAD = """
import sys
from huggingface_hub import hf_hub_download, snapshot_download
repo, revision = sys.argv[1], sys.argv[2]
try:
    hf_hub_download(repo, "config.json", revision=revision)
    print(snapshot_download(repo, revision=revision, allow_patterns=["*.safetensors", "*.json"]))
except Exception as error:
    print(type(error).__name__, file=sys.stderr)
    sys.exit(3)
"""


def _load_as_the_server(project: Project, revision: str) -> subprocess.CompletedProcess[str]:
    """What SGLang's weight loader does, with the server's environment: the served env (the
    Hub offline) and the mounted cache, the local Hub as the endpoint it would reach."""
    env = project.env(**launch_spec_for(load_locked(str(project.lock_path())), IMAGE).env)
    return subprocess.run(
        [sys.executable, "-c", _LOAD, "org/model", revision],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_fetched_cache_serves_the_locked_commit_with_the_hub_offline(
    project: Project,
) -> None:
    model_sha, _ = _pinned(project)
    project.fetch()
    project.hub.log.clear()
    loaded = _load_as_the_server(project, model_sha)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip().endswith(f"/snapshots/{model_sha}")
    # `main` is not in a cache filled by commit (no refs/main): the SHA is what makes it work.
    assert not (project.cache / "models--org--model" / "refs" / "main").exists()
    assert _load_as_the_server(project, "main").returncode == 3
    assert project.hub.log == []


def test_a_file_missing_from_the_cache_is_an_error_never_a_download(project: Project) -> None:
    model_sha, _ = _pinned(project)
    project.fetch()
    snapshot = project.cache / "models--org--model" / "snapshots" / model_sha
    (snapshot / "config.json").unlink()
    project.hub.log.clear()
    loaded = _load_as_the_server(project, model_sha)
    assert loaded.returncode == 3
    assert "LocalEntryNotFoundError" in loaded.stderr or "OfflineModeIsEnabled" in loaded.stderr
    assert project.hub.log == []
    assert not (snapshot / "config.json").exists()
