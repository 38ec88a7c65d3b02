"""The Kimi K2.6 twin's text model (DeepSeek-V3: MLA attention, MoE with a shared expert)
served by SGLang 0.5.23's own CPU engine: its weights load under their checkpoint names and
it answers. The whole twin (`KimiK25ForConditionalGeneration`) cannot start here: its vision
processor needs torchvision (docs/real-engine.md)."""

from __future__ import annotations

import json
import struct
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from repro.realengine.engine import running_engine
from repro.realengine.twins import KIMI_TEXT_TWIN, MODEL_TWINS, TwinSpec, ensure_specs
from tests.support.ports import free_port

pytestmark = pytest.mark.real_sglang


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def _tensor_bytes(path: Path) -> dict[str, bytes]:
    """Each tensor's raw bytes, by the safetensors header (no torch needed)."""
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    body = data[8 + size :]
    return {
        name: body[meta["data_offsets"][0] : meta["data_offsets"][1]]
        for name, meta in header.items()
        if name != "__metadata__"
    }


def test_the_kimi_twins_text_model_serves_on_sglangs_cpu_engine(tmp_path: Path) -> None:
    kimi = MODEL_TWINS["moonshotai/Kimi-K2.6"]
    text, full = ensure_specs(
        [KIMI_TEXT_TWIN, TwinSpec(kimi.kind, kimi.repo)], cache_dir=tmp_path / "hub"
    )
    # the very weights of the twin's language model, under the names it hands them on with
    whole = _tensor_bytes(full.model_dir / "model.safetensors")
    assert _tensor_bytes(text.model_dir / "model.safetensors") == {
        name.removeprefix("language_model."): blob for name, blob in whole.items()
    }
    log = tmp_path / "engine.log"
    with running_engine(text.model_dir, free_port(), log) as engine:
        generated = _post(
            f"{engine.url}/generate",
            {"text": "why is the sky blue", "sampling_params": {"max_new_tokens": 6,
                                                              "ignore_eos": True}},
        )  # fmt: skip
        chat = _post(
            f"{engine.url}/v1/chat/completions",
            {
                "model": "kimi-twin",
                "messages": [{"role": "user", "content": "what is the capital of france"}],
                "max_tokens": 4,
                "ignore_eos": True,
                "chat_template_kwargs": {"thinking": False},
            },
        )
    assert generated["meta_info"]["completion_tokens"] == 6
    assert chat["usage"]["completion_tokens"] == 4
    served = log.read_text(errors="replace")
    assert "type=DeepseekV3ForCausalLM" in served
    assert "not found in params_dict" not in served  # every checkpoint name was taken
