"""One SGLang 0.5.23 CPU engine per session, serving the seeded tiny Qwen3.

Tests here are marked `real_sglang` (each module's `pytestmark`): they run SGLang's own
TokenizerManager, Scheduler, ModelRunner and HTTP server from `.venv-sglang/` (`make
sglang-engine` makes it), and fail, not skip, when it is missing, so CI cannot pass without them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from repro.realengine.engine import Engine, make_tiny_model, running_engine
from tests.support.ports import free_port


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "qwen3-tiny", seed=0)


@pytest.fixture(scope="session")
def engine_standin_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("engine") / "standin-ops.jsonl"


@pytest.fixture(scope="session")
def sglang_engine(
    tiny_model: Path, engine_standin_log: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Engine]:
    log = tmp_path_factory.mktemp("engine") / "engine.log"
    with running_engine(
        tiny_model, free_port(), log, env={"REPRO_STANDIN_LOG": str(engine_standin_log)}
    ) as engine:
        yield engine
