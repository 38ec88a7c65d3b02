"""Pytest fixtures shared by tests/hub and tests/lock: a Hub server, a project, the CLI.

A `Project` is a temporary repro project (recipes/, images/, patches/) whose recipe `small`
names the model `org/model` and the drafter `org/drafter` served by the local Hub; `repro`
runs the real CLI in a subprocess with HF_ENDPOINT / HF_HUB_CACHE / HF_HOME pointing at the
test's server and directories (huggingface_hub reads them at import time).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hubserver.repos import HubFile, HubRepo, random_bytes
from hubserver.server import HubServer
from repro.hub import FetchReport, SpaceMargin
from repro.lock import LockResult, fetch_recipe, load_locked, lock_recipe

REPRO = Path(sys.executable).parent / "repro"

IMAGE_SPEC = """\
base:
  image: lmsysorg/sglang
  tag: nightly-dev-cu13-20260817-d91c3682
  digest: sha256:fa8774dd128600a09fd6d46670b06fb69a55dac8a3881e50ccf0916a45eb39af
sglang_version: "0.5.23"
cuda_version: "13.0"
gpu_architectures: ["12.0"]
patch_set:
  name: fix
  local: [fix.patch]
"""

RECIPE = """\
image: gpu
model: {repo: org/model, revision: main}
drafter: {repo: org/drafter, revision: main}
speculative: {algorithm: DFLASH}
parallelism: {tp: 1}
topology: {gpus: 1}
bench: {dataset: chat}
"""

MODEL_WEIGHTS = 2_500_000
DRAFTER_WEIGHTS = 400_000


def model_files() -> list[HubFile]:
    """A small model repo: what a server needs, plus what it must skip."""
    return [
        HubFile("config.json", b'{"model_type": "deepseek_v3", "num_hidden_layers": 2}'),
        HubFile("generation_config.json", b'{"temperature": 1.0}'),
        HubFile("tokenizer_config.json", b'{"chat_template": null}'),
        HubFile("chat_template.jinja", b"{% for m in messages %}{{ m.content }}{% endfor %}"),
        HubFile("tiktoken.model", random_bytes(20_000, "tok")),
        HubFile("modeling_deepseek.py", b"# trust_remote_code\n"),
        HubFile("model.safetensors.index.json", b'{"weight_map": {}}'),
        HubFile("model-00001-of-00001.safetensors", random_bytes(MODEL_WEIGHTS, "model")),
        HubFile("pytorch_model.bin", random_bytes(1000, "dup")),
        HubFile("README.md", b"# model card"),
        HubFile("figures/bench.png", random_bytes(500, "png")),
        HubFile(".gitattributes", b"*.safetensors filter=lfs\n"),
    ]


def drafter_files() -> list[HubFile]:
    return [
        HubFile("config.json", b'{"block_size": 8}'),
        HubFile("model.safetensors", random_bytes(DRAFTER_WEIGHTS, "drafter")),
        HubFile("README.md", b"# drafter"),
    ]


@dataclass
class Project:
    root: Path
    hub: HubServer
    cache: Path
    home: Path

    @property
    def model(self) -> HubRepo:
        return self.hub.repos["org/model"]

    @property
    def drafter(self) -> HubRepo:
        return self.hub.repos["org/drafter"]

    def lock_path(self, name: str = "small") -> Path:
        return self.root / "locks" / f"{name}.lock.json"

    def env(self, **extra: str | None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
        env.update(
            HF_ENDPOINT=self.hub.endpoint,
            HF_HUB_CACHE=str(self.cache),
            HF_HOME=str(self.home),
            HF_HUB_DISABLE_TELEMETRY="1",
            COLUMNS="200",
            REPRO_RECIPES_DIR=str(self.root / "recipes"),
        )
        for key, value in extra.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return env

    def lock(self, ref: str = "small", **kwargs: Any) -> LockResult:
        """`repro lock` in-process (the library function behind the CLI). The request log is
        emptied after it, so that a test counts what later stages download (the lock reads
        the drafter's config.json)."""
        result = lock_recipe(load_locked(ref), endpoint=self.hub.endpoint, **kwargs)
        self.hub.log.clear()
        return result

    def fetch(self, ref: str = "small", **kwargs: Any) -> FetchReport:
        """`repro fetch` in-process; margin 0 unless given."""
        kwargs.setdefault("margin", SpaceMargin(fraction=0, keep_free=0))
        kwargs.setdefault("cache_dir", self.cache)
        return fetch_recipe(load_locked(ref, lock="require"), endpoint=self.hub.endpoint, **kwargs)

    def repro(self, *args: str, **env: str | None) -> subprocess.CompletedProcess[str]:
        """The real `repro` CLI in a subprocess (huggingface_hub reads HF_* at import)."""
        return subprocess.run(
            [str(REPRO), *args],
            cwd=self.root,
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=120,
        )


def make_project(root: Path, hub: HubServer) -> Project:
    for sub in ("recipes", "images", "patches/fix"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "images" / "gpu.yaml").write_text(IMAGE_SPEC)
    (root / "patches" / "fix" / "fix.patch").write_text("--- a/x.py\n+++ b/x.py\n-a\n+b\n")
    (root / "recipes" / "small.yaml").write_text(RECIPE)
    return Project(root=root, hub=hub, cache=root / "hf-cache", home=root / "hf-home")


@pytest.fixture
def hub() -> Iterator[HubServer]:
    with HubServer() as server:
        yield server


@pytest.fixture
def project(tmp_path: Path, hub: HubServer, monkeypatch: pytest.MonkeyPatch) -> Project:
    hub.add_repo("org/model", model_files())
    hub.add_repo("org/drafter", drafter_files())
    proj = make_project(tmp_path / "proj", hub)
    monkeypatch.chdir(proj.root)
    for name in [k for k in os.environ if k.startswith(("HF_", "HUGGING", "REPRO_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("REPRO_RECIPES_DIR", str(proj.root / "recipes"))
    return proj


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real 4 MiB filesystem (tmpfs), unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "small-disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
