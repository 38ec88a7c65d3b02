"""SGLang's own CPU engine serves the tiny model through both endpoints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.realengine.engine import Engine
from tests.realengine.serving import CHAT_TOKENS, GENERATE_TOKENS, generate_and_chat

pytestmark = pytest.mark.real_sglang


def test_generate_and_chat_answer_with_the_tokens_asked_for(
    sglang_engine: Engine, engine_standin_log: Path
) -> None:
    generated, chat = generate_and_chat(sglang_engine.url, {"enable_thinking": False})
    assert generated["meta_info"]["completion_tokens"] == GENERATE_TOKENS
    assert len(generated["output_ids"]) == GENERATE_TOKENS
    assert chat["usage"]["completion_tokens"] == CHAT_TOKENS
    asked = {json.loads(line)["name"] for line in engine_standin_log.read_text().splitlines()}
    assert "sgl_kernel.copy_all_layer_kv_cache_cpu" in asked
