"""The Kimi K2.6 twin's text model (DeepSeek-V3: MLA attention, MoE with a shared expert)
served by SGLang 0.5.23's own CPU engine: its weights load under their checkpoint names and
it answers. The whole twin (`KimiK25ForConditionalGeneration`) cannot start here: its vision
processor needs torchvision (docs/real-engine.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.realengine.engine import running_engine
from repro.realengine.twins import KIMI_TEXT_TWIN, MODEL_TWINS, TwinSpec, ensure_specs
from tests.realengine.serving import CHAT_TOKENS, GENERATE_TOKENS, generate_and_chat
from tests.realengine.tensorfiles import tensor_bytes
from tests.support.ports import free_port

pytestmark = pytest.mark.real_sglang


def test_the_kimi_twins_text_model_serves_on_sglangs_cpu_engine(tmp_path: Path) -> None:
    kimi = MODEL_TWINS["moonshotai/Kimi-K2.6"]
    text, full = ensure_specs(
        [KIMI_TEXT_TWIN, TwinSpec(kimi.kind, kimi.repo)], cache_dir=tmp_path / "hub"
    )
    # the very weights of the twin's language model, under the names it hands them on with
    whole = tensor_bytes(full.model_dir / "model.safetensors")
    assert tensor_bytes(text.model_dir / "model.safetensors") == {
        name.removeprefix("language_model."): blob for name, blob in whole.items()
    }
    log = tmp_path / "engine.log"
    with running_engine(text.model_dir, free_port(), log) as engine:
        generated, chat = generate_and_chat(engine.url, {"thinking": False})
    assert generated["meta_info"]["completion_tokens"] == GENERATE_TOKENS
    assert chat["usage"]["completion_tokens"] == CHAT_TOKENS
    served = log.read_text(errors="replace")
    assert "type=DeepseekV3ForCausalLM" in served
    assert "not found in params_dict" not in served  # every checkpoint name was taken
