"""Fixtures: simulator processes started like the image starts them (the `simulator` fixture)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from repro.image.sim_base import stand_in_patch
from repro.sim.server_argparser import load_catalog, shipped_catalog
from tests.support.simulator import Sim, Simulators

from .simproc import FAST, MODEL, SHIM


@pytest.fixture(scope="module")
def patched_shim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the shim with DDTREE registered, as sgl-project/sglang#29907 does."""
    root = tmp_path_factory.mktemp("shim") / "python"
    shutil.copytree(SHIM, root, ignore=shutil.ignore_patterns("__pycache__"))
    spec_info = root / "sglang" / "srt" / "speculative" / "spec_info.py"
    text = spec_info.read_text()
    spec_info.write_text(
        text.replace("    DFLASH = auto()\n", "    DFLASH = auto()\n    DDTREE = auto()\n")
    )
    return root


@pytest.fixture(scope="module")
def stand_in_shim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the shim with the patch `repro run R --sim` applies for a recipe on the DDTree
    image (SGLang 0.5.15 plus DDTREE), applied with patch(1) as the image build does."""
    root = tmp_path_factory.mktemp("stand-in") / "python"
    shutil.copytree(SHIM, root, ignore=shutil.ignore_patterns("__pycache__"))
    catalog = load_catalog(str(shipped_catalog("0.5.15")))
    patch = stand_in_patch("0.5.15", [*catalog["builtin_speculative_algorithms"], "DDTREE"])
    subprocess.run(["patch", "-p1", "--batch"], input=patch, text=True, cwd=root.parent, check=True)
    return root


@pytest.fixture(scope="session")
def sim(simulator: Simulators) -> Sim:
    """The demo profile, 20x faster, with --enable-metrics."""
    return simulator(["--model-path", MODEL, "--enable-metrics"], FAST)


@pytest.fixture(scope="session")
def sim_incremental(simulator: Simulators) -> Sim:
    """Deltas in streams; two DP ranks with a small KV cache (2000 tokens each)."""
    args = ["--model-path", MODEL, "--incremental-streaming-output", "--dp-size", "2"]
    return simulator([*args, "--max-total-tokens", "2000"], FAST)


@pytest.fixture(scope="session")
def sim_dflash(simulator: Simulators) -> Sim:
    """DFLASH with block size 8 (the demo profile's acceptance), metrics on."""
    args = [
        "--model-path", MODEL, "--enable-metrics",
        "--speculative-algorithm", "DFLASH",
        "--speculative-draft-model-path", "z-lab/Qwen3-0.6B-DFlash",
        "--speculative-dflash-block-size", "8",
    ]  # fmt: skip
    return simulator(args, FAST)
