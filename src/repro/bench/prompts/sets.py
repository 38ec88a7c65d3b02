"""Prompts: the shipped prompt sets (math, code, chat), data files and Hub datasets (read by
repro.bench.prompts.datasets) and bench datasets. Chat templates: repro.bench.prompts.chattemplate.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TypeVar

from repro.bench.prompts.benchsets import BENCH_SETS, load_bench_set
from repro.bench.prompts.chattemplate import ChatTemplate
from repro.bench.prompts.datasets import (
    PromptSet,
    load_file,
    load_hub_dataset,
    read_prompts,
    text_table,
)
from repro.bench.prompts.longdocs import LONG_SETS, load_long_set
from repro.errors import ReproError
from repro.schema.dataset import (
    DATA_SUFFIXES,
    HF_PREFIX,
    HF_SYNTAX,
    SHAREGPT_REF,
    ShippedSource,
)

T = TypeVar("T")
SHIPPED_SETS = ("math", "code", "chat")
# How `--dataset sharegpt` samples bench_serving's ShareGPT file, beside how bench_serving does
# (sglang/benchmark/datasets/sharegpt.py `sample_sharegpt_requests`): the record names it.
SHAREGPT_VARIANT = (
    "repro-sharegpt-fixed: the first human turn of each conversation, in file order, cycled; "
    "output_len tokens with ignore_eos (bench_serving with --sharegpt-output-len; without it, "
    "bench_serving keeps conversations of 2+ turns, shuffles them, and uses each reply's "
    "token length)"
)


def load_prompt_set(
    ref: str, *, endpoint: str | None = None, cache_dir: Path | None = None
) -> PromptSet:
    """A shipped set by name, a named benchmark set (BENCH_SETS: z-lab's protocol), a long
    document set (LONG_SETS: LongBench-v2), a data file, or a Hub dataset (`hf:...`, pinned
    to a commit).

    Raises ReproError for an empty set. `endpoint` / `cache_dir` default to HF_ENDPOINT /
    HF_HUB_CACHE.
    """
    if ref in SHIPPED_SETS:
        where = f"prompts/data/{ref}.jsonl"
        text = (
            resources.files("repro.bench.prompts")
            .joinpath("data", f"{ref}.jsonl")
            .read_text("utf-8")
        )
        prompts, _ = read_prompts(where, [(where, text_table(text, ".jsonl", where))], None, "")
        digest = hashlib.sha256(text.encode()).hexdigest()
        found = PromptSet(ref, prompts, ShippedSource(name=ref, sha256=digest))
    elif ref in BENCH_SETS:
        found = load_bench_set(ref, endpoint=endpoint, cache_dir=cache_dir)
    elif ref in LONG_SETS:
        found = load_long_set(ref, endpoint=endpoint, cache_dir=cache_dir)
    elif ref.startswith(HF_PREFIX):
        found = load_hub_dataset(ref, endpoint=endpoint, cache_dir=cache_dir)
    else:
        path = Path(ref)
        if not path.is_file():
            raise ReproError(
                f"prompt set {ref!r} is neither a shipped or benchmark set nor a file",
                hint=f"use one of {', '.join(SHIPPED_SETS + tuple(BENCH_SETS) + LONG_SETS)}, "
                f"a path to a "
                f"{'/'.join(DATA_SUFFIXES)} file, or {HF_SYNTAX}",
            )
        found = load_file(path)
    found.prompts = [p for p in found.prompts if p.strip()]
    if not found.prompts:
        raise ReproError(f"prompt set {ref!r} is empty", hint="give it at least one prompt")
    return found


def take(prompts: Sequence[T], n: int) -> list[T]:
    """n prompts (or dialogues), cycling through the set when it is shorter."""
    return [prompts[i % len(prompts)] for i in range(n)]


# ---- bench datasets -----------------------------------------------------------------------

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _random_word(rng: random.Random) -> str:
    # lower + upper + lower: one piece for a word-piece tokenizer, not an English word
    return (
        rng.choice(_LETTERS)
        + rng.choice(_LETTERS).upper()
        + "".join(rng.choice(_LETTERS) for _ in range(rng.randint(0, 2)))
    )


def random_words(rng: random.Random, count: int) -> str:
    """`count` random words, about `count` tokens (what bench's random dataset sends)."""
    return " ".join(_random_word(rng) for _ in range(count))


def _fit(words: list[str], n: int) -> str:
    return " ".join(words[i % len(words)] for i in range(n))


def bench_source(
    dataset: str, *, endpoint: str | None = None, cache_dir: Path | None = None
) -> PromptSet | None:
    """The prompts behind a bench dataset; None for `random` (synthetic, made per level).

    chat: the shipped chat set, fitted to input_len; sharegpt: SGLang bench_serving's ShareGPT
    file from the Hub (SHAREGPT_REF), sampled as SHAREGPT_VARIANT says (recorded as the
    source's `variant`); a file or `hf:` reference: its prompts as they are.
    """
    if dataset == "random":
        return None
    if dataset == "chat":
        found = load_prompt_set("chat")
        found.fit_to_length = True
        return found
    if dataset == "sharegpt":
        found = load_prompt_set(SHAREGPT_REF, endpoint=endpoint, cache_dir=cache_dir)
        found.source = found.source.model_copy(update={"variant": SHAREGPT_VARIANT})
        return found
    return load_prompt_set(dataset, endpoint=endpoint, cache_dir=cache_dir)


def bench_prompts(
    dataset: str | PromptSet | None,
    count: int,
    input_len: int,
    *,
    seed: int = 0,
    template: ChatTemplate | None = None,
    thinking: bool | None = False,
) -> list[str]:
    """`count` prompts from `dataset` (a name, or what bench_source gave), chat-formatted
    with `template` (thinking as given) or, without one, the user turns as they are (what
    goes into a chat request's messages: the server applies the template).

    random (or None): synthetic random words, about input_len tokens, never templated (what
    bench_serving's random dataset is: noise to a drafter); chat: the shipped chat prompts
    padded by repeating the prompt or truncated to input_len words; any other set: its
    prompts as they are, in order, cycling when the level is longer than the set.
    """
    if count <= 0:
        return []
    source = bench_source(dataset) if isinstance(dataset, str) else dataset
    rng = random.Random(seed)
    if source is None:
        return [random_words(rng, input_len) for _ in range(count)]
    out = []
    for prompt in take(source.prompts, count):
        text = _fit(prompt.split(), max(1, input_len - 1)) if source.fit_to_length else prompt
        # a distinct tag per request so prefix caching does not turn the level into hits
        tagged = f"[{rng.randrange(10**9)}] " + text
        out.append(template.render(tagged, thinking=thinking) if template else tagged)
    return out
