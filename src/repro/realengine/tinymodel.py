"""A tiny random Qwen3 (and a tiny DFlash drafter for it), made deterministically from a seed.

SGLang's own engine needs a real checkpoint to serve; this one is small enough for a 2-core CPU
(2 layers, hidden 64, vocab 1024, bf16 safetensors, ~300 KB) and is made offline: a byte-level
BPE tokenizer trained on fixed sentences, with a Qwen3-style chat template that honours
``enable_thinking``. The same seed gives byte-identical files.

Run it with the engine's Python (it needs torch, transformers and tokenizers, which repro does
not): ``.venv-sglang/bin/python src/repro/realengine/tinymodel.py OUT [--seed 0]
[--drafter OUT_DRAFT [--block-size 4]]``. It does not import repro.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

VOCAB_SIZE = 1024
HIDDEN = 64
LAYERS = 2
HEADS = 4
KV_HEADS = 2
HEAD_DIM = 16
INTERMEDIATE = 128
DRAFT_LAYERS = 1
DRAFT_BLOCK_SIZE = 4

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<|MASK|>"]
EOS = "<|im_end|>"
MASK = "<|MASK|>"  # DFlash's default mask token (sglang/srt/speculative/dflash_utils.py)

CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}"
    "{{- '<think>\\n\\n</think>\\n\\n' }}"
    "{%- endif %}"
    "{%- endif %}"
)

_TEXT = (
    "the server answers every request in order while the scheduler batches decode steps "
    "a speculative drafter proposes tokens and the target model verifies them at once "
    "latency throughput concurrency acceptance length tokens per second first token "
    "benchmarks repeat the same prompts so that two runs can be compared fairly "
    "weights are pinned by commit images by digest and recipes by their own hash "
    "please summarise the following paragraph in one sentence and explain your answer "
    "what is the capital of france why is the sky blue how do rockets reach orbit "
    "numbers 0 1 2 3 4 5 6 7 8 9 10 100 1000 3.14 2.71 42 are written here too"
)
_WORDS = _TEXT.split()


def corpus() -> list[str]:
    """Fixed training sentences: every rotation of the word list, in two casings."""
    sentences = []
    for shift in range(len(_WORDS)):
        words = _WORDS[shift:] + _WORDS[:shift]
        for start in range(0, len(words), 12):
            chunk = " ".join(words[start : start + 12])
            sentences += [chunk, chunk.capitalize() + "."]
    return sentences


def make_tokenizer(
    out: Path,
    *,
    template: str = CHAT_TEMPLATE,
    special_tokens: list[str] = SPECIAL_TOKENS,
    eos: str = EOS,
    pad: str = "<|endoftext|>",
) -> None:
    """A byte-level BPE tokenizer trained on `corpus()`, with `template` as its chat template
    (transformers writes it to chat_template.jinja)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=eos,
        pad_token=pad,
        additional_special_tokens=special_tokens,
    )
    fast.chat_template = template
    fast.save_pretrained(str(out))


CONTEXT = 4096  # the tiny Qwen3's max_position_embeddings


@dataclass(frozen=True)
class Attention:
    """A Qwen3 attention's shape: what SGLang's attention kernels specialise on (the head
    dimension, query heads per key-value head) and its context length."""

    heads: int = HEADS
    kv_heads: int = KV_HEADS
    head_dim: int = HEAD_DIM
    context: int = CONTEXT


TINY_ATTENTION = Attention()


def _qwen3_config(
    layers: int,
    eos_id: int,
    pad_id: int,
    hidden: int = HIDDEN,
    attention: Attention = TINY_ATTENTION,
):
    from transformers import Qwen3Config

    return Qwen3Config(
        vocab_size=VOCAB_SIZE,
        hidden_size=hidden,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=layers,
        num_attention_heads=attention.heads,
        num_key_value_heads=attention.kv_heads,
        head_dim=attention.head_dim,
        max_position_embeddings=attention.context,
        rope_parameters={"rope_theta": 1_000_000.0, "rope_type": "default"},
        tie_word_embeddings=False,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        bos_token_id=None,
        dtype="bfloat16",
    )


def capturable_layer_ids(num_layers: int, count: int) -> list[int]:
    """`count` target layers (at most num_layers - 1) a DFlash drafter can read, spread
    evenly, none of them the last: SGLang captures the hidden state after target layer `k`
    "before layer k + 1" (``set_dflash_layers_to_capture`` in sglang/srt/models/qwen3.py,
    deepseek_v2.py, qwen3_vl.py for qwen3_5), and there is no layer after the last one, so
    ``target_layer_ids`` must all be <= num_layers - 2 (SGLang's own
    ``resolve_target_layer_ids`` in speculative/dflash_utils.py only checks < num_layers)."""
    last = num_layers - 2
    if last < 0:
        raise ValueError(f"a {num_layers}-layer target has no layer a drafter can capture")
    count = min(count, last + 1)
    if count == 1:
        return [last // 2]
    return sorted({round(i * last / (count - 1)) for i in range(count)})


def _token_id(tok: Any, token: str) -> int:
    found = tok.convert_tokens_to_ids(token)
    assert isinstance(found, int), token
    return found


def make_model(out: Path, seed: int) -> None:
    """The target: a random Qwen3ForCausalLM in bf16, with its tokenizer."""
    import torch
    from transformers import AutoTokenizer, Qwen3ForCausalLM

    out.mkdir(parents=True, exist_ok=True)
    make_tokenizer(out)
    tok = AutoTokenizer.from_pretrained(str(out))
    torch.manual_seed(seed)
    config = _qwen3_config(LAYERS, _token_id(tok, EOS), tok.pad_token_id)
    model: Any = Qwen3ForCausalLM(config)
    model = model.to(torch.bfloat16)
    model.generation_config.do_sample = True
    model.save_pretrained(str(out), safe_serialization=True)


def target_text_config(target: Path) -> dict[str, Any]:
    """The target's config.json, its text model's part for a multimodal one."""
    config: dict[str, Any] = json.loads((target / "config.json").read_text())
    text: dict[str, Any] = config.get("text_config", config)
    return text


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")


def copy_tokenizer(target: Path, out: Path) -> None:
    """The target's tokenizer and chat template beside a drafter (they share a vocabulary)."""
    for name in TOKENIZER_FILES:
        if (target / name).is_file():
            (out / name).write_bytes((target / name).read_bytes())


def make_drafter(
    out: Path,
    target: Path,
    seed: int,
    block_size: int = DRAFT_BLOCK_SIZE,
    attention: Attention = TINY_ATTENTION,
) -> None:
    """A random DFlash drafter for the model at `target` (its hidden size, vocabulary,
    layers and context length: SGLang's draft worker builds the drafter's ModelConfig with
    the target's context length and refuses a shorter one, ``_derive_context_length`` in
    configs/model_config.py), with `attention`'s heads and head dimension, whose config and
    weight names are those SGLang's ``DFlashDraftModel`` loads
    (sglang/srt/models/dflash.py, speculative/dflash_utils.py): Qwen3 decoder layers, ``fc``
    projecting the hidden states of the target layers it can capture
    (`capturable_layer_ids`), ``hidden_norm``. ``block_size`` is top-level, where
    ``parse_dflash_draft_config`` falls back to when ``dflash_config`` has none (as z-lab's
    checkpoints have it); the weights do not depend on it, so drafters of one seed differ
    only in their config."""
    import torch
    from safetensors.torch import save_file
    from transformers import AutoTokenizer, Qwen3Model

    out.mkdir(parents=True, exist_ok=True)
    text = target_text_config(target)
    hidden, layers = int(text["hidden_size"]), int(text["num_hidden_layers"])
    tok = AutoTokenizer.from_pretrained(str(target))
    mask_id = _token_id(tok, MASK)
    torch.manual_seed(seed + 1)
    attention = replace(attention, context=int(text["max_position_embeddings"]))
    config = _qwen3_config(DRAFT_LAYERS, _token_id(tok, EOS), tok.pad_token_id, hidden, attention)
    body: Any = Qwen3Model(config)
    body = body.to(torch.bfloat16)
    target_layers = capturable_layer_ids(layers, layers - 1)
    weights = {k: v for k, v in body.state_dict().items() if not k.startswith("embed_tokens.")}
    weights["fc.weight"] = (torch.randn(hidden, len(target_layers) * hidden) * 0.02).to(
        torch.bfloat16
    )
    weights["hidden_norm.weight"] = torch.ones(hidden, dtype=torch.bfloat16)
    save_file({k: v.contiguous() for k, v in sorted(weights.items())}, out / "model.safetensors")
    draft = config.to_dict()
    draft.update(
        architectures=["DFlashDraftModel"],
        block_size=block_size,
        num_target_layers=layers,
        dflash_config={"mask_token_id": mask_id, "target_layer_ids": target_layers},
    )
    (out / "config.json").write_text(json.dumps(draft, indent=2, sort_keys=True) + "\n")
    copy_tokenizer(target, out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for the target model")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--drafter", type=Path, help="also write a DFlash drafter here")
    parser.add_argument(
        "--block-size", type=int, default=DRAFT_BLOCK_SIZE, help="the drafter's block size"
    )
    args = parser.parse_args()
    if args.block_size < 1:
        parser.error(f"--block-size must be at least 1, got {args.block_size}")
    make_model(args.out, args.seed)
    if args.drafter:
        make_drafter(args.drafter, args.out, args.seed, args.block_size)


if __name__ == "__main__":
    main()
