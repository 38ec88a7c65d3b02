from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from repro.recipe import load_recipe
from tests.support.simulator import DFLASH, Sim, Simulators


@pytest.fixture(scope="session")
def sim_spec(simulator: Simulators) -> Iterator[Sim]:
    """A DFLASH simulator (demo profile, time scaled down)."""
    server = simulator.tiny(*DFLASH, REPRO_SIM_TIME_SCALE="0.3")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def sim_plain(simulator: Simulators) -> Iterator[Sim]:
    """A simulator without speculative decoding."""
    server = simulator.tiny(REPRO_SIM_TIME_SCALE="0.3")
    yield server
    server.stop()


@pytest.fixture()
def demo() -> object:
    return load_recipe("demo")


@pytest.fixture()
def demo_plain(demo: object) -> object:
    """The demo without its drafter: what `sim_plain` serves (a bench checks the server's
    identity against the recipe first)."""
    return demo.model_copy(update={"drafter": None, "speculative": None})  # type: ignore[attr-defined]


@pytest.fixture()
def runs(tmp_path: Path) -> Path:
    return tmp_path / "runs"
