"""Shared test set-up.

Tests marked `docker` use the real engine that `make test` installs and starts; they fail
(not skip) when it is missing, so CI can never pass without running them.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.recipe.conftest import Project, make_project
from tests.support.simulator import Simulators

# testcontainers' Ryuk reaper pulls its own image from a registry CI cannot reach.
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
# A shell starting `make test` in the background (`nohup ... &`) hands it SIGINT ignored, and
# an ignored signal stays ignored in every child: the Ctrl-C tests' `repro` would never see
# theirs. A handler here is reset to the default in each child at exec.
signal.signal(signal.SIGINT, signal.default_int_handler)

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def simulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Simulators]:
    """Starts simulators (`simulator(args, env)`, `simulator.tiny(*args)`): the one way tests
    run one; all are stopped when the session ends."""
    simulators = Simulators(tmp_path_factory.mktemp("simlogs"))
    yield simulators
    simulators.close()


@pytest.fixture(scope="session")
def sim_image() -> str:
    """The simulator image of the `sim` image spec, built for real (cached by content tag)."""
    from repro.image.build import build_image
    from repro.image.buildplan import plan_for_spec
    from repro.recipe.images import load_image_spec

    spec = load_image_spec(REPO_ROOT / "images" / "sim.yaml")
    return build_image(plan_for_spec(spec)).tag


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Deployment state of this test only (compose overrides under .repro/)."""
    monkeypatch.setenv("REPRO_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


@pytest.fixture(scope="module")
def twin_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Hub cache of the module's own: the engine dry-start's twins are made once per module,
    never in the user's cache."""
    return tmp_path_factory.mktemp("hub")


@pytest.fixture
def engine_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, twin_cache: Path) -> Project:
    """A copy of the project (recipes, images, patches); the current directory is its root,
    the Hub cache the module's `twin_cache`, the patch cache empty (as CI's: no DDTree diff)."""
    monkeypatch.setenv("HF_HUB_CACHE", str(twin_cache))
    monkeypatch.setenv("REPRO_PATCH_CACHE", str(tmp_path / "patches"))
    project = make_project(tmp_path / "proj")
    monkeypatch.chdir(project.root)
    monkeypatch.delenv("REPRO_RECIPES_DIR", raising=False)
    monkeypatch.delenv("REPRO_IMAGES_DIR", raising=False)
    return project
