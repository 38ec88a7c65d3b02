"""One Hub cache for every stage: the one `repro fetch` fills is the one `repro launch` mounts
and `repro doctor` measures, by huggingface_hub's own precedence of variables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from repro.doctor.host import disk_info
from repro.hub.cache import cache_root, hub_cache_dir
from repro.launch.compose import CONTAINER_HUB_CACHE, render_override
from repro.launch.from_recipe import launch_spec_for
from repro.launch.spec import SERVICE
from repro.lock import load_locked

CACHE_VARS = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME")


@pytest.fixture
def bare_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No Hub cache variable set, and a HOME of this test's own."""
    for var in CACHE_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return monkeypatch


def mounted_cache(repo_root: Path) -> Path:
    """The host directory the rendered Compose override mounts as the server's Hub cache."""
    spec = launch_spec_for(load_locked(repo_root / "recipes" / "demo.yaml"), "repro/demo:test")
    (volume,) = render_override(spec)["services"][SERVICE]["volumes"]
    host, container = volume.rsplit(":", 1)
    assert container == CONTAINER_HUB_CACHE
    return Path(host)


def assert_every_stage_uses(expected: Path, repo_root: Path) -> None:
    assert mounted_cache(repo_root) == expected  # launch
    assert cache_root() == expected  # fetch
    assert Path(disk_info(os.environ).hub_cache) == expected  # doctor


def test_launch_mounts_the_xdg_cache_that_fetch_fills(
    bare_env: pytest.MonkeyPatch, tmp_path: Path, repo_root: Path
) -> None:
    bare_env.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert_every_stage_uses(tmp_path / "xdg" / "huggingface" / "hub", repo_root)


def test_hf_hub_cache_wins_over_hf_home_and_xdg(
    bare_env: pytest.MonkeyPatch, tmp_path: Path, repo_root: Path
) -> None:
    bare_env.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    bare_env.setenv("HF_HOME", str(tmp_path / "hf-home"))
    bare_env.setenv("HF_HUB_CACHE", str(tmp_path / "fast" / "hub"))
    assert_every_stage_uses(tmp_path / "fast" / "hub", repo_root)


def test_hf_home_wins_over_xdg_and_the_default_is_under_home(
    bare_env: pytest.MonkeyPatch, tmp_path: Path, repo_root: Path
) -> None:
    assert_every_stage_uses(tmp_path / "home" / ".cache" / "huggingface" / "hub", repo_root)
    bare_env.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    bare_env.setenv("HF_HOME", str(tmp_path / "hf-home"))
    assert_every_stage_uses(tmp_path / "hf-home" / "hub", repo_root)


@pytest.mark.parametrize(
    "variables",
    [
        {},
        {"XDG_CACHE_HOME": "xdg"},
        {"XDG_CACHE_HOME": "xdg", "HF_HOME": "hf-home"},
        {"HF_HOME": "hf-home", "HUGGINGFACE_HUB_CACHE": "legacy"},
        {"HUGGINGFACE_HUB_CACHE": "legacy", "HF_HUB_CACHE": "new"},
    ],
)
def test_the_precedence_is_huggingface_hubs_own(tmp_path: Path, variables: dict[str, str]) -> None:
    """huggingface_hub reads its variables once, at import: ask a fresh process."""
    env = {k: v for k, v in os.environ.items() if k not in CACHE_VARS}
    env |= {"HOME": str(tmp_path)} | {k: str(tmp_path / v) for k, v in variables.items()}
    code = "from huggingface_hub import constants; print(constants.HF_HUB_CACHE)"
    theirs = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert Path(theirs.stdout.strip()) == hub_cache_dir(env)
