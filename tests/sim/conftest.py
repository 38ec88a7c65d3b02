"""Fixtures: simulator processes started like the image starts them."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .simproc import FAST, MODEL, SHIM, Sim


@pytest.fixture(scope="session")
def sim_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    started: list[Sim] = []
    logs = tmp_path_factory.mktemp("simlogs")

    def start(
        args: list[str],
        env: dict[str, str] | None = None,
        wait: bool = True,
        shim: Path = SHIM,
        module: tuple[str, ...] = ("-m", "sglang.launch_server"),
    ) -> Sim:
        sim = Sim(args, env, logs / f"sim{len(started)}.log", shim, module)
        started.append(sim)
        return sim.wait_ready() if wait else sim

    yield start
    for sim in started:  # SIGTERM them all first: they shut down in parallel
        if sim.proc.poll() is None:
            sim.proc.terminate()
    for sim in started:
        sim.stop()
    broken = [sim.log_path for sim in started if "Traceback" in sim.log()]
    assert not broken, f"simulator logs with a traceback: {broken}"


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


@pytest.fixture(scope="session")
def sim(sim_factory: Any) -> Sim:
    """The demo profile, 20x faster, with --enable-metrics."""
    return sim_factory(["--model-path", MODEL, "--enable-metrics"], FAST)


@pytest.fixture(scope="session")
def sim_incremental(sim_factory: Any) -> Sim:
    """Deltas in streams; two DP ranks with a small KV cache (2000 tokens each)."""
    args = ["--model-path", MODEL, "--incremental-streaming-output", "--dp-size", "2"]
    return sim_factory([*args, "--max-total-tokens", "2000"], FAST)


@pytest.fixture(scope="session")
def sim_dflash(sim_factory: Any) -> Sim:
    """DFLASH with block size 8 (the demo profile's acceptance), metrics on."""
    args = [
        "--model-path", MODEL, "--enable-metrics",
        "--speculative-algorithm", "DFLASH",
        "--speculative-draft-model-path", "z-lab/Qwen3-0.6B-DFlash",
        "--speculative-dflash-block-size", "8",
    ]  # fmt: skip
    return sim_factory(args, FAST)
