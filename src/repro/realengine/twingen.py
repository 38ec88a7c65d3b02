"""Tiny twins of the shipped models and drafters, made deterministically from a seed.

Each twin has its real model's architecture string and config fields (the ones SGLang 0.5.23
reads for that class). Layers, hidden size (64), experts, head counts and vocabulary (1024)
are scaled down; what a kernel or a start-up check specialises on is the real model's: head
dimensions, MLA latent ranks, rope/nope/value head dimensions, GDN head sizes, the ratios of
query to key-value heads (GDN value to key heads), the rope sections, the context length, the
state dtype (tests/realengine/test_twin_kernel_fields.py holds them against the real
configs, each field with the SGLang file that reads it). The DFlash drafters have the real
drafters' head dimension and their target's context length.
Weights are random bf16 under the checkpoint names the SGLang class's ``load_weights``
accepts; the tokenizer is tinymodel.py's byte-level BPE with the real model's chat template
switch. The same seed gives byte-identical files.

- ``qwen3``: the tiny Qwen3 of tinymodel.py.
- ``kimi_k25``: Kimi K2.6 (``KimiK25ForConditionalGeneration``, sglang/srt/models/kimi_k25.py,
  configs/kimi_k25.py): a DeepSeek-V3 text model (MLA attention, a dense first layer, then
  MoE layers of routed experts with a sigmoid ``noaux_tc`` router and a shared expert;
  models/deepseek_v2.py) under ``language_model.``, in a vision wrapper whose tower is
  configured but carries no weights (the text path never runs it). Template switch
  ``thinking``.
- ``kimi_k25_text``: that text model alone (``DeepseekV3ForCausalLM``, the same weights
  without ``language_model.``): what a GPU serves without the vision processor
  (docs/real-engine.md).
- ``kimi_k25_nvfp4``: the same, with nvidia/Kimi-K2.6-NVFP4's ``quantization_config``
  (ModelOpt NVFP4, group 16) and ``hf_quant_config.json``: the routed experts in NVFP4
  (packed uint8 weights, float8_e4m3fn block scales, float32 global and input scales), the
  rest excluded, as SGLang's ``ModelOptFp4Config`` (layers/quantization/modelopt_quant.py)
  reads them.
- ``qwen3_5``: Qwen3.6-27B (``Qwen3_5ForConditionalGeneration``, models/qwen3_5.py,
  configs/qwen3_5.py): hybrid layers, three gated-delta-net linear-attention layers to one
  gated full-attention layer, under ``model.language_model.``, no vision weights. Template
  switch ``enable_thinking``.
- drafter ``dflash``: tinymodel.py's ``DFlashDraftModel`` (models/dflash.py) for the target's
  hidden size and vocabulary, reading target layers it can capture.
- drafter ``eagle3``: ``Eagle3DeepseekV2ForCausalLM`` (models/kimi_k25_eagle3.py, what SGLang
  0.5.23 serves lightseekorg/kimi-k2.6-eagle3.1-mla with): one MLA decoder layer over
  [embedding, hidden] and ``fc`` over three captured target layers.

Run with the engine's Python: ``.venv-sglang/bin/python src/repro/realengine/twingen.py
PLAN.json`` (see ``run_plan``; repro.realengine.twins writes the plan). It does not import
repro.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tinymodel  # the sibling script: tokenizer, tiny Qwen3 and its drafter, capture rule

VOCAB = tinymodel.VOCAB_SIZE
HIDDEN = tinymodel.HIDDEN

KIMI_TOKENS = [
    "[BOS]", "[EOS]", "[PAD]", "<|im_end|>", "<|im_user|>", "<|im_assistant|>",
    "<|im_system|>", "<|im_middle|>", "<think>", "</think>", "<|MASK|>",
]  # fmt: skip
# Kimi K2.x's template shape, with its thinking switch `thinking` (on unless false)
KIMI_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_' + message['role'] + '|>' + message['role'] + '<|im_middle|>' }}"
    "{{- message['content'] + '<|im_end|>' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{- '<|im_assistant|>assistant<|im_middle|>' }}"
    "{%- if thinking is defined and thinking is false -%}{{- '<think></think>' }}"
    "{%- else -%}{{- '<think>' }}{%- endif -%}"
    "{%- endif -%}"
)
# Qwen3.6's template shape: thinking on unless enable_thinking is false
QWEN36_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}"
    "{{- '<think>\\n\\n</think>\\n\\n' }}"
    "{%- else %}{{- '<think>\\n' }}{%- endif %}"
    "{%- endif %}"
)

# Kimi K2.6's text model (config.json text_config): layers, hidden, heads, experts scaled
KIMI_LAYERS = 4
KIMI_TEXT: dict[str, Any] = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "kimi_k2",
    "vocab_size": VOCAB,
    "hidden_size": HIDDEN,
    "intermediate_size": 128,
    "moe_intermediate_size": 32,
    "num_hidden_layers": KIMI_LAYERS,
    "num_nextn_predict_layers": 0,
    "num_attention_heads": 2,  # per GPU 8 at tp 8; two keep the grouped decode kernel
    "num_key_value_heads": 2,
    "n_shared_experts": 1,
    "n_routed_experts": 16,
    "num_experts_per_tok": 8,
    "routed_scaling_factor": 2.827,
    "n_group": 1,
    "topk_group": 1,
    "topk_method": "noaux_tc",
    "scoring_func": "sigmoid",
    "norm_topk_prob": True,
    "first_k_dense_replace": 1,
    "moe_layer_freq": 1,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "hidden_act": "silu",
    "attention_bias": False,
    "attention_dropout": 0.0,
    "rms_norm_eps": 1e-5,
    "max_position_embeddings": 262144,
    "rope_theta": 50000.0,
    "rope_scaling": {
        "type": "yarn", "factor": 64.0, "original_max_position_embeddings": 4096,
        "beta_fast": 1.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
    },
    "tie_word_embeddings": False,
    "use_cache": True,
    "initializer_range": 0.02,
    "torch_dtype": "bfloat16",
}  # fmt: skip
KIMI_VISION: dict[str, Any] = {
    "patch_size": 14,
    "init_pos_emb_height": 8,
    "init_pos_emb_width": 8,
    "init_pos_emb_time": 4,
    "pos_emb_type": "divided_fixed",
    "num_attention_heads": 2,
    "num_hidden_layers": 1,
    "hidden_size": 32,
    "intermediate_size": 64,
    "merge_kernel_size": [2, 2],
    "video_attn_type": "spatial_temporal",
    "merge_type": "sd2_tpool",
    "mm_projector_type": "patchmerger",
    "mm_hidden_size": 32,
    "projector_hidden_act": "gelu",
    "projector_ln_eps": 1e-5,
    "text_hidden_size": HIDDEN,
}
NVFP4_GROUP = 16
NVFP4_EXCLUDED = ["lm_head", "*self_attn*", "*shared_experts*", "*mlp.gate", "*layers.0.mlp*"]

# Qwen3.6-27B's text model (config.json text_config): layers, hidden, heads scaled; per
# head and per ratio the real one (24 query / 4 kv heads of 256, GDN 16 key / 48 value heads
# of 128)
QWEN35_LAYERS = 4  # linear, linear, linear, full (full_attention_interval 4)
QWEN35_TEXT: dict[str, Any] = {
    "model_type": "qwen3_5_text",
    "vocab_size": VOCAB,
    "hidden_size": HIDDEN,
    "intermediate_size": 128,
    "num_hidden_layers": QWEN35_LAYERS,
    "layer_types": ["linear_attention"] * 3 + ["full_attention"],
    "full_attention_interval": 4,
    "num_attention_heads": 6,
    "num_key_value_heads": 1,
    "head_dim": 256,
    "attn_output_gate": True,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 6,
    "mamba_ssm_dtype": "float32",
    "hidden_act": "silu",
    "rms_norm_eps": 1e-6,
    "max_position_embeddings": 262144,
    "rope_parameters": {
        "rope_type": "default", "rope_theta": 10_000_000.0, "partial_rotary_factor": 0.25,
        "mrope_section": [11, 11, 10], "mrope_interleaved": True,
    },
    "partial_rotary_factor": 0.25,
    "attention_bias": False,
    "attention_dropout": 0.0,
    "mtp_num_hidden_layers": 0,
    "tie_word_embeddings": False,
    "use_cache": True,
    "initializer_range": 0.02,
    "dtype": "bfloat16",
}  # fmt: skip
QWEN35_VISION: dict[str, Any] = {
    "model_type": "qwen3_5",
    "depth": 1,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_heads": 2,
    "in_channels": 3,
    "patch_size": 16,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "out_hidden_size": HIDDEN,
    "num_position_embeddings": 64,
    "hidden_act": "gelu_pytorch_tanh",
    "deepstack_visual_indexes": [],
}

EAGLE3_TARGET_LAYERS = 3  # the three aux hidden states EAGLE3 concatenates
# z-lab's DFlash drafters' attention (Qwen3 layers: head_dim 128, 32 query to 8 kv heads),
# heads scaled; the context length is always the target's (tinymodel.make_drafter)
DFLASH_ATTENTION = tinymodel.Attention(heads=4, kv_heads=1, head_dim=128)


class Weights:
    """Random bf16 tensors in a fixed order from one seeded generator."""

    def __init__(self, seed: int) -> None:
        import torch

        self.torch = torch
        self.generator = torch.Generator().manual_seed(seed)
        self.tensors: dict[str, Any] = {}

    def add(self, name: str, *shape: int, ones: bool = False) -> None:
        torch = self.torch
        if ones:
            tensor = torch.ones(*shape, dtype=torch.bfloat16)
        else:
            tensor = torch.randn(*shape, generator=self.generator) * 0.02
        self.tensors[name] = tensor.to(torch.bfloat16).contiguous()

    def linear(self, name: str, out: int, inp: int) -> None:
        self.add(f"{name}.weight", out, inp)

    def norm(self, name: str, width: int) -> None:
        self.add(f"{name}.weight", width, ones=True)

    def nvfp4_linear(self, name: str, out: int, inp: int) -> None:
        """A ModelOpt NVFP4 linear: two e2m1 values a byte, one e4m3 scale per 16 inputs."""
        torch = self.torch
        packed = torch.randint(0, 256, (out, inp // 2), generator=self.generator)
        self.tensors[f"{name}.weight"] = packed.to(torch.uint8)
        scale = torch.full((out, inp // NVFP4_GROUP), 1.0).to(torch.float8_e4m3fn)
        self.tensors[f"{name}.weight_scale"] = scale
        self.tensors[f"{name}.weight_scale_2"] = torch.tensor(1e-3, dtype=torch.float32)
        self.tensors[f"{name}.input_scale"] = torch.tensor(1.0, dtype=torch.float32)

    def save(self, out: Path) -> None:
        from safetensors.torch import save_file

        save_file(dict(sorted(self.tensors.items())), str(out / "model.safetensors"))


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def _generation_config(out: Path, eos_id: int) -> None:
    _write_json(out / "generation_config.json", {"do_sample": True, "eos_token_id": eos_id})


def _tokenizer(out: Path, template: str, tokens: list[str], eos: str, pad: str) -> dict[str, int]:
    """tinymodel's BPE tokenizer with `tokens` and `template`; returns the special ids."""
    from transformers import AutoTokenizer

    tinymodel.make_tokenizer(out, template=template, special_tokens=tokens, eos=eos, pad=pad)
    tok = AutoTokenizer.from_pretrained(str(out))
    return {t: tinymodel._token_id(tok, t) for t in tokens}


def _mla_attention(w: Weights, prefix: str, text: dict[str, Any], width: int) -> None:
    """DeepSeek-V2/V3 multi-latent attention's checkpoint names (models/deepseek_v2.py)."""
    heads = text["num_attention_heads"]
    nope, rope, v = text["qk_nope_head_dim"], text["qk_rope_head_dim"], text["v_head_dim"]
    q_rank, kv_rank = text["q_lora_rank"], text["kv_lora_rank"]
    w.linear(f"{prefix}.q_a_proj", q_rank, width)
    w.norm(f"{prefix}.q_a_layernorm", q_rank)
    w.linear(f"{prefix}.q_b_proj", heads * (nope + rope), q_rank)
    w.linear(f"{prefix}.kv_a_proj_with_mqa", kv_rank + rope, width)
    w.norm(f"{prefix}.kv_a_layernorm", kv_rank)
    w.linear(f"{prefix}.kv_b_proj", heads * (nope + v), kv_rank)
    w.linear(f"{prefix}.o_proj", text["hidden_size"], heads * v)


def _mlp(w: Weights, prefix: str, hidden: int, inner: int, nvfp4: bool = False) -> None:
    linear = w.nvfp4_linear if nvfp4 else w.linear
    linear(f"{prefix}.gate_proj", inner, hidden)
    linear(f"{prefix}.up_proj", inner, hidden)
    linear(f"{prefix}.down_proj", hidden, inner)


def make_kimi(out: Path, seed: int, nvfp4: bool = False, text_only: bool = False) -> None:
    """Kimi K2.6's twin; `text_only`: its text model alone, the same weights as the
    ``DeepseekV3ForCausalLM`` that ``KimiK25ForConditionalGeneration.load_weights`` hands
    them to (``language_model.`` dropped), which serves without the vision processor."""
    out.mkdir(parents=True, exist_ok=True)
    ids = _tokenizer(out, KIMI_TEMPLATE, KIMI_TOKENS, "<|im_end|>", "[PAD]")
    text = dict(KIMI_TEXT, bos_token_id=ids["[BOS]"], eos_token_id=ids["<|im_end|>"])
    text["pad_token_id"] = ids["[PAD]"]
    hidden = text["hidden_size"]
    w = Weights(seed)
    top = "" if text_only else "language_model."
    root = f"{top}model"
    w.add(f"{root}.embed_tokens.weight", VOCAB, hidden)
    for i in range(text["num_hidden_layers"]):
        layer = f"{root}.layers.{i}"
        w.norm(f"{layer}.input_layernorm", hidden)
        w.norm(f"{layer}.post_attention_layernorm", hidden)
        _mla_attention(w, f"{layer}.self_attn", text, hidden)
        if i < text["first_k_dense_replace"]:
            _mlp(w, f"{layer}.mlp", hidden, text["intermediate_size"])
            continue
        experts = text["n_routed_experts"]
        w.linear(f"{layer}.mlp.gate", experts, hidden)
        w.add(f"{layer}.mlp.gate.e_score_correction_bias", experts)
        for e in range(experts):
            _mlp(w, f"{layer}.mlp.experts.{e}", hidden, text["moe_intermediate_size"], nvfp4)
        shared = text["moe_intermediate_size"] * text["n_shared_experts"]
        _mlp(w, f"{layer}.mlp.shared_experts", hidden, shared)
    w.norm(f"{root}.norm", hidden)
    w.linear(f"{top}lm_head", VOCAB, hidden)
    w.save(out)
    if text_only:
        _write_json(out / "config.json", dict(text, model_type="deepseek_v3"))
        _generation_config(out, ids["<|im_end|>"])
        return
    config: dict[str, Any] = {
        "architectures": ["KimiK25ForConditionalGeneration"],
        "model_type": "kimi_k25",
        "text_config": text,
        "vision_config": KIMI_VISION,
        "media_placeholder_token_id": ids["<|MASK|>"],
        "pad_token_id": ids["[PAD]"],
        "bos_token_id": ids["[BOS]"],
        "eos_token_id": ids["<|im_end|>"],
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }
    if nvfp4:
        quant = {
            "quant_algo": "NVFP4",
            "kv_cache_quant_algo": None,
            "group_size": NVFP4_GROUP,
            "exclude_modules": NVFP4_EXCLUDED,
        }
        config["quantization_config"] = {"quant_method": "modelopt", **quant}
        _write_json(out / "hf_quant_config.json", {"producer": {"name": "modelopt"},
                                                    "quantization": quant})  # fmt: skip
    _write_json(out / "config.json", config)
    _generation_config(out, ids["<|im_end|>"])


def make_qwen35(out: Path, seed: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tokens = [*tinymodel.SPECIAL_TOKENS, "<|vision_start|>", "<|vision_end|>", "<|image_pad|>",
              "<|video_pad|>"]  # fmt: skip
    ids = _tokenizer(out, QWEN36_TEMPLATE, tokens, tinymodel.EOS, "<|endoftext|>")
    text = dict(QWEN35_TEXT, eos_token_id=ids[tinymodel.EOS])
    hidden, head_dim = text["hidden_size"], text["head_dim"]
    heads, kv_heads = text["num_attention_heads"], text["num_key_value_heads"]
    k_dim = text["linear_num_key_heads"] * text["linear_key_head_dim"]
    v_heads = text["linear_num_value_heads"]
    v_dim = v_heads * text["linear_value_head_dim"]
    w = Weights(seed)
    root = "model.language_model"
    w.add(f"{root}.embed_tokens.weight", VOCAB, hidden)
    for i, kind in enumerate(text["layer_types"]):
        layer = f"{root}.layers.{i}"
        w.norm(f"{layer}.input_layernorm", hidden)
        w.norm(f"{layer}.post_attention_layernorm", hidden)
        if kind == "linear_attention":  # Qwen3_5GatedDeltaNet's checkpoint names
            lin = f"{layer}.linear_attn"
            w.linear(f"{lin}.in_proj_qkv", 2 * k_dim + v_dim, hidden)
            w.linear(f"{lin}.in_proj_z", v_dim, hidden)
            w.linear(f"{lin}.in_proj_b", v_heads, hidden)
            w.linear(f"{lin}.in_proj_a", v_heads, hidden)
            w.add(f"{lin}.conv1d.weight", 2 * k_dim + v_dim, 1, text["linear_conv_kernel_dim"])
            w.add(f"{lin}.A_log", v_heads)
            w.add(f"{lin}.dt_bias", v_heads, ones=True)
            w.norm(f"{lin}.norm", text["linear_value_head_dim"])
            w.linear(f"{lin}.out_proj", hidden, v_dim)
        else:  # gated full attention: q_proj carries the query and its output gate
            att = f"{layer}.self_attn"
            w.linear(f"{att}.q_proj", 2 * heads * head_dim, hidden)
            w.linear(f"{att}.k_proj", kv_heads * head_dim, hidden)
            w.linear(f"{att}.v_proj", kv_heads * head_dim, hidden)
            w.linear(f"{att}.o_proj", hidden, heads * head_dim)
            w.norm(f"{att}.q_norm", head_dim)
            w.norm(f"{att}.k_norm", head_dim)
        _mlp(w, f"{layer}.mlp", hidden, text["intermediate_size"])
    w.norm(f"{root}.norm", hidden)
    w.linear("lm_head", VOCAB, hidden)
    w.save(out)
    config = {
        "architectures": ["Qwen3_5ForConditionalGeneration"],
        "model_type": "qwen3_5",
        "text_config": text,
        "vision_config": QWEN35_VISION,
        "image_token_id": ids["<|image_pad|>"],
        "video_token_id": ids["<|video_pad|>"],
        "vision_start_token_id": ids["<|vision_start|>"],
        "vision_end_token_id": ids["<|vision_end|>"],
        "tie_word_embeddings": False,
    }
    _write_json(out / "config.json", config)
    _generation_config(out, ids[tinymodel.EOS])
    _qwen35_processors(out)


def _qwen35_processors(out: Path) -> None:
    """The image and video processor configs SGLang's tokenizer manager loads at start for a
    Qwen3.5 checkpoint (AutoProcessor: transformers' Qwen3-VL processors), sized like the
    twin's vision tower; without them the server stops at start (a lent H100, 2026-12-07)."""
    vision = QWEN35_VISION
    shared = {
        "patch_size": vision["patch_size"],
        "temporal_patch_size": vision["temporal_patch_size"],
        "merge_size": vision["spatial_merge_size"],
        "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5],
        "processor_class": "Qwen3VLProcessor",
    }
    _write_json(
        out / "preprocessor_config.json",
        {**shared, "image_processor_type": "Qwen2VLImageProcessorFast",
         "size": {"shortest_edge": 65536, "longest_edge": 16777216}},
    )  # fmt: skip
    _write_json(
        out / "video_preprocessor_config.json",
        {**shared, "video_processor_type": "Qwen3VLVideoProcessor",
         "size": {"shortest_edge": 4096, "longest_edge": 25165824}, "fps": 2},
    )  # fmt: skip


def make_eagle3(out: Path, target: Path, seed: int) -> None:
    """An EAGLE3.1 MLA drafter for a Kimi twin (models/kimi_k25_eagle3.py): embedding, one
    MLA decoder layer whose attention reads [embedding, hidden] (twice the width), ``fc``
    over three target layers' hidden states (each normed first: ``fc_norm``, eagle3.1),
    ``norm`` and ``lm_head``."""
    out.mkdir(parents=True, exist_ok=True)
    text = tinymodel.target_text_config(target)
    hidden, layers = text["hidden_size"], text["num_hidden_layers"]
    aux = tinymodel.capturable_layer_ids(layers, EAGLE3_TARGET_LAYERS)
    w = Weights(seed + 2)
    # the checkpoint layout its load_weights maps (layers.0. -> model.midlayer., the rest
    # under model. but lm_head): an unknown name is only a warning there, so get them right
    w.add("embed_tokens.weight", VOCAB, hidden)
    w.linear("fc", hidden, len(aux) * hidden)
    for i in range(len(aux)):  # eagle3.1's fc_norm: one RMSNorm per captured hidden state
        w.norm(f"fc_norm.{i}", hidden)
    layer = "layers.0"
    w.norm(f"{layer}.input_layernorm", hidden)
    w.norm(f"{layer}.hidden_norm", hidden)
    w.norm(f"{layer}.post_attention_layernorm", hidden)
    _mla_attention(w, f"{layer}.self_attn", text, 2 * hidden)  # reads [embedding, hidden]
    _mlp(w, f"{layer}.mlp", hidden, text["intermediate_size"])
    w.norm("norm", hidden)
    w.linear("lm_head", VOCAB, hidden)
    w.save(out)
    config = {
        key: text[key]
        for key in (
            "vocab_size", "hidden_size", "intermediate_size", "num_attention_heads",
            "num_key_value_heads", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
            "qk_rope_head_dim", "v_head_dim", "hidden_act", "rms_norm_eps",
            "max_position_embeddings", "rope_theta", "rope_scaling", "attention_bias",
        )
    }  # fmt: skip
    config.update(
        architectures=["Eagle3DeepseekV2ForCausalLM"],
        model_type="kimi_k2",
        num_hidden_layers=1,
        target_hidden_size=hidden,
        draft_vocab_size=VOCAB,
        tie_word_embeddings=False,
        torch_dtype="bfloat16",
        eagle_config={"eagle_aux_hidden_state_layer_ids": aux, "use_aux_hidden_state": True},
        fc_norm=True,
        norm_output=True,
    )
    _write_json(out / "config.json", config)
    tinymodel.copy_tokenizer(target, out)


MODELS: dict[str, Callable[[Path, int], None]] = {
    "qwen3": tinymodel.make_model,
    "kimi_k25": make_kimi,
    "kimi_k25_nvfp4": lambda out, seed: make_kimi(out, seed, nvfp4=True),
    "kimi_k25_text": lambda out, seed: make_kimi(out, seed, text_only=True),
    "qwen3_5": make_qwen35,
}
DRAFTERS = ("dflash", "eagle3")


def make_drafter(
    kind: str, out: Path, target: Path, target_kind: str, seed: int, block_size: int | None
) -> None:
    """A drafter of `kind` for the twin at `target`; the tiny Qwen3's DFlash drafter keeps
    tinymodel.py's own attention (the bytes `repro image tiny-model` makes)."""
    if kind == "dflash":
        block = block_size or tinymodel.DRAFT_BLOCK_SIZE
        tiny = target_kind == "qwen3"
        attention = tinymodel.TINY_ATTENTION if tiny else DFLASH_ATTENTION
        tinymodel.make_drafter(out, target, seed, block, attention)
    elif kind == "eagle3":
        make_eagle3(out, target, seed)
    else:
        raise SystemExit(f"drafter kind must be one of {', '.join(DRAFTERS)}, got {kind}")


def run_plan(plan: dict[str, Any]) -> None:
    """Make every twin of `plan` in this one process (torch and transformers load once):
    ``{"seed": N, "models": [{"kind", "out", "marker", "drafters": [{"kind", "out",
    "block_size", "marker"}]}]}``; each ``marker`` is written as repro-twin.json."""
    seed = int(plan["seed"])
    for model in plan["models"]:
        out = Path(model["out"])
        MODELS[model["kind"]](out, seed)
        _write_json(out / "repro-twin.json", model["marker"])
        for drafter in model.get("drafters", []):
            draft_out = Path(drafter["out"])
            make_drafter(
                drafter["kind"], draft_out, out, model["kind"], seed, drafter.get("block_size")
            )
            _write_json(draft_out / "repro-twin.json", drafter["marker"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("plan", type=Path, help="a JSON plan of twins to make (run_plan)")
    run_plan(json.loads(parser.parse_args().plan.read_text()))


if __name__ == "__main__":
    main()
