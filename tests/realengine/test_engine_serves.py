"""SGLang's own CPU engine serves the tiny model through both endpoints."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from repro.realengine.engine import Engine

pytestmark = pytest.mark.real_sglang


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def test_generate_and_chat_answer_with_the_tokens_asked_for(
    sglang_engine: Engine, engine_standin_log: Path
) -> None:
    generated = _post(
        f"{sglang_engine.url}/generate",
        {
            "text": "why is the sky blue",
            "sampling_params": {"max_new_tokens": 6, "ignore_eos": True},
        },
    )
    assert generated["meta_info"]["completion_tokens"] == 6
    assert len(generated["output_ids"]) == 6
    chat = _post(
        f"{sglang_engine.url}/v1/chat/completions",
        {
            "model": "tiny",
            "messages": [{"role": "user", "content": "what is the capital of france"}],
            "max_tokens": 4,
            "ignore_eos": True,
            "chat_template_kwargs": {"enable_thinking": False},
        },
    )
    assert chat["usage"]["completion_tokens"] == 4
    asked = {json.loads(line)["name"] for line in engine_standin_log.read_text().splitlines()}
    assert "sgl_kernel.copy_all_layer_kv_cache_cpu" in asked
