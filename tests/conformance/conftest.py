"""Two servers started with the same SGLang argv: the light simulator (repro's own HTTP server)
and SGLang 0.5.23's own front end with repro's scheduler process behind it.

The front end runs in the Python `scripts/ensure-sglang` makes (.venv-sglang/, or
REPRO_SGLANG_PYTHON); tests here are marked `real_sglang` and fail, not skip, without it. The
tiny model is the one the real-engine tests serve (repro.realengine.tinymodel).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from repro.realengine.engine import EngineError, engine_python, make_tiny_model
from repro.settings import SGLANG_PYTHON
from tests.support.simulator import Sim, Simulators

FRONTEND = ("-m", "repro.sim.sglang_frontend")
# the demo recipe on the tiny model, as a user would write it for this server
RECIPE = """\
extends: demo
description: the demo recipe on SGLang's front end with repro's scheduler (tiny Qwen3)
model: {repo: repro-test/qwen3-tiny, revision: main}
drafter: {repo: repro-test/qwen3-tiny-dflash, revision: main}
speculative: {algorithm: DFLASH, num_draft_tokens: 4}
"""


@dataclass
class Pair:
    sim: Sim
    sglang: Sim
    request_log: Path  # SGLang's --log-requests-target folder (JSON lines per finished request)


def sglang_venv() -> Path:
    """.venv-sglang/, or the environment of REPRO_SGLANG_PYTHON."""
    venv = Path(SGLANG_PYTHON.text()).parents[1]
    try:
        engine_python(venv)
    except EngineError as e:
        pytest.fail(f"{e} ({e.hint})")
    return venv


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The seeded tiny Qwen3 and its DFlash drafter (config and tokenizer are what SGLang's
    front end reads), in folders named like the Hub repos a recipe names (RECIPE)."""
    root = tmp_path_factory.mktemp("models") / "repro-test"  # served as repro-test/qwen3-tiny
    target, drafter = root / "qwen3-tiny", root / "qwen3-tiny-dflash"
    make_tiny_model(target, seed=0, drafter=drafter, venv=sglang_venv())
    return target, drafter


def argv(model: Path, drafter: Path, log_dir: Path) -> list[str]:
    return [
        "--model-path", str(model),
        "--device", "cuda",  # resolves on a CPU host; DFLASH refuses other devices
        "--speculative-algorithm", "DFLASH",
        "--speculative-draft-model-path", str(drafter),
        "--enable-metrics",
        "--decode-log-interval", "5",  # gauge windows close within the first probes on both
        "--log-requests", "--log-requests-level", "0", "--log-requests-format", "json",
        "--log-requests-target", str(log_dir),
    ]  # fmt: skip


@pytest.fixture(scope="session")
def pair(
    simulator: Simulators, tmp_path_factory: pytest.TempPathFactory, tiny_models: tuple[Path, Path]
) -> Iterator[Pair]:
    logs = tmp_path_factory.mktemp("conformance")
    request_log = logs / "requests"
    request_log.mkdir()
    args = argv(*tiny_models, request_log)
    env = {"REPRO_SIM_PROFILE": "demo", "REPRO_SIM_SEED": "7"}
    python = str(engine_python(sglang_venv()))
    sglang = simulator(args, env, wait=False, shim=None, module=FRONTEND, python=python)
    sim = simulator(args, env, wait=False)
    try:
        yield Pair(sim.wait_ready(60), sglang.wait_ready(300), request_log)
    finally:
        for server in (sim, sglang):
            server.stop()
    assert "Traceback" not in sglang.log(), sglang.log()[-4000:]
