"""The Kimi K2.6 twin's text model (DeepSeek-V3: MLA attention at Kimi's own ranks and head
dimensions, MoE with a shared expert) on SGLang 0.5.23's own CPU engine: its weights load
under their checkpoint names, and the first prefill stops where SGLang's CPU path cannot run
MLA. torch_native has no MLA handler of its own (models/deepseek_common/
attention_backend_handler.py falls back to triton's), which sends a prefill without a prefix
down the MHA path (q of qk_nope + qk_rope = 192) while torch_native's extend reads K from the
latent cache (kv_lora_rank + qk_rope = 576). The scaled twin served only because its two
sums happened to be equal (32 + 16 = 48). The GPU serves it on triton (docs/real-engine.md).
The whole twin (`KimiK25ForConditionalGeneration`) cannot start here: its vision processor
needs torchvision."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.realengine.engine import EngineError, running_engine
from repro.realengine.twins import KIMI_TEXT_TWIN, MODEL_TWINS, TwinSpec, ensure_specs
from tests.realengine.tensorfiles import tensor_bytes
from tests.support.ports import free_port

pytestmark = pytest.mark.real_sglang


def test_the_kimi_twins_text_model_loads_on_the_cpu_engine_and_its_mla_prefill_stops(
    tmp_path: Path,
) -> None:
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
    starting = running_engine(text.model_dir, free_port(), log)
    with pytest.raises(EngineError, match="before it was ready"), starting:
        pass
    served = log.read_text(errors="replace")
    assert "type=DeepseekV3ForCausalLM" in served  # the weights loaded
    assert "not found in params_dict" not in served  # every checkpoint name was taken
    # SGLang's warm-up prefill: the MHA path's 192-wide q against the 576-wide latent cache
    assert "forward_normal_core" in served and "torch_native_backend.py" in served
    assert "[2, 192] but got: [2, 576]" in served
