"""Prompts: the shipped prompt sets (math, code, chat), data files and Hub datasets (read by
repro.bench.datasets), bench datasets, and chat templates rendered with jinja2 (no
transformers).

Chat template: the model snapshot's own (`chat_template.jinja`, or `chat_template` in
`tokenizer_config.json`) when it is in the local Hub cache or a local directory; otherwise
the built-in ChatML-like template below (`<|im_start|>role\\n...<|im_end|>`), the format of
Qwen and many others. Templates see `messages`, `add_generation_prompt`, `enable_thinking`,
`bos_token`, `eos_token` and `raise_exception`, as transformers' apply_chat_template.
"""

from __future__ import annotations

import hashlib
import random
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from repro import fileread
from repro.bench.benchsets import BENCH_SETS, load_bench_set
from repro.bench.datasets import PromptSet, load_file, load_hub_dataset, read_prompts, text_table
from repro.errors import ReproError
from repro.spec.dataset import DATA_SUFFIXES, HF_PREFIX, HF_SYNTAX, SHAREGPT_REF

SHIPPED_SETS = ("math", "code", "chat")

BUILTIN_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n"
    "{% endif %}{% endif %}"
)


def load_prompt_set(
    ref: str, *, endpoint: str | None = None, cache_dir: Path | None = None
) -> PromptSet:
    """A shipped set by name, a named benchmark set (BENCH_SETS: z-lab's protocol), a data
    file, or a Hub dataset (`hf:...`, pinned to a commit).

    Raises ReproError for an empty set. `endpoint` / `cache_dir` default to HF_ENDPOINT /
    HF_HUB_CACHE.
    """
    if ref in SHIPPED_SETS:
        where = f"prompts/{ref}.jsonl"
        text = resources.files("repro.bench").joinpath(where).read_text("utf-8")
        prompts, _ = read_prompts(where, [(where, text_table(text, ".jsonl", where))], None, "")
        digest = hashlib.sha256(text.encode()).hexdigest()
        found = PromptSet(ref, prompts, {"kind": "shipped", "name": ref, "sha256": digest})
    elif ref in BENCH_SETS:
        found = load_bench_set(ref, endpoint=endpoint, cache_dir=cache_dir)
    elif ref.startswith(HF_PREFIX):
        found = load_hub_dataset(ref, endpoint=endpoint, cache_dir=cache_dir)
    else:
        path = Path(ref)
        if not path.is_file():
            raise ReproError(
                f"prompt set {ref!r} is neither a shipped or benchmark set nor a file",
                hint=f"use one of {', '.join(SHIPPED_SETS + tuple(BENCH_SETS))}, a path to a "
                f"{'/'.join(DATA_SUFFIXES)} file, or {HF_SYNTAX}",
            )
        found = load_file(path)
    found.prompts = [p for p in found.prompts if p.strip()]
    if not found.prompts:
        raise ReproError(f"prompt set {ref!r} is empty", hint="give it at least one prompt")
    return found


def take(prompts: list[str], n: int) -> list[str]:
    """n prompts, cycling through the set when it is shorter."""
    return [prompts[i % len(prompts)] for i in range(n)]


# ---- chat templates -----------------------------------------------------------------------


class ChatTemplate:
    def __init__(self, source: str, *, bos_token: str = "", eos_token: str = "", origin: str = ""):
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)

        def raise_exception(message: str) -> None:
            raise TemplateError(message)

        env.globals["raise_exception"] = raise_exception
        self.origin = origin or "built-in ChatML"
        self._template = env.from_string(source)
        self._bos, self._eos = bos_token, eos_token

    def render(self, prompt: str, *, thinking: bool | None = None) -> str:
        kwargs: dict[str, Any] = {
            "messages": [{"role": "user", "content": prompt}],
            "add_generation_prompt": True,
            "bos_token": self._bos,
            "eos_token": self._eos,
        }
        if thinking is not None:
            kwargs["enable_thinking"] = thinking
        try:
            return self._template.render(**kwargs)
        except TemplateError as exc:
            raise ReproError(f"chat template ({self.origin}) failed: {exc}") from None


def _token_text(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("content", ""))
    return value if isinstance(value, str) else ""


def template_from_dir(snapshot: Path) -> ChatTemplate | None:
    jinja = snapshot / "chat_template.jinja"
    config_path = snapshot / "tokenizer_config.json"
    config: dict[str, Any] = {}
    if config_path.is_file():
        try:
            parsed = fileread.read_json(config_path)
        except fileread.UnreadableFile:
            parsed = {}
        config = parsed if isinstance(parsed, dict) else {}
    source = fileread.read_text(jinja) if jinja.is_file() else config.get("chat_template")
    if isinstance(source, list):  # named templates: take "default"
        source = next((t.get("template") for t in source if t.get("name") == "default"), None)
    if not isinstance(source, str):
        return None
    return ChatTemplate(
        source,
        bos_token=_token_text(config.get("bos_token")),
        eos_token=_token_text(config.get("eos_token")),
        origin=str(snapshot),
    )


def chat_template_for(repo: str | None, revision: str | None = None) -> ChatTemplate:
    """The model's template from the local Hub cache (never downloads), else the built-in."""
    if repo:
        local = Path(repo)
        if local.is_dir():
            found = template_from_dir(local)
            if found:
                return found
        try:
            # deferred: huggingface_hub loads only when the template is not local
            from huggingface_hub import try_to_load_from_cache

            for name in ("chat_template.jinja", "tokenizer_config.json"):
                hit = try_to_load_from_cache(repo, name, revision=revision)
                if isinstance(hit, str):
                    found = template_from_dir(Path(hit).parent)
                    if found:
                        return found
        except Exception:  # an odd cache layout is not worth failing a benchmark for
            pass
    return ChatTemplate(BUILTIN_CHAT_TEMPLATE)


# ---- bench datasets -----------------------------------------------------------------------

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _random_word(rng: random.Random) -> str:
    # lower + upper + lower: one piece for a word-piece tokenizer, not an English word
    return (
        rng.choice(_LETTERS)
        + rng.choice(_LETTERS).upper()
        + "".join(rng.choice(_LETTERS) for _ in range(rng.randint(0, 2)))
    )


def _fit(words: list[str], n: int) -> str:
    return " ".join(words[i % len(words)] for i in range(n))


def bench_source(
    dataset: str, *, endpoint: str | None = None, cache_dir: Path | None = None
) -> PromptSet | None:
    """The prompts behind a bench dataset; None for `random` (synthetic, made per level).

    chat: the shipped chat set, fitted to input_len; sharegpt: SGLang bench_serving's ShareGPT
    file from the Hub (SHAREGPT_REF); a file or `hf:` reference: its prompts as they are.
    """
    if dataset == "random":
        return None
    if dataset == "chat":
        found = load_prompt_set("chat")
        found.fit_to_length = True
        return found
    ref = SHAREGPT_REF if dataset == "sharegpt" else dataset
    return load_prompt_set(ref, endpoint=endpoint, cache_dir=cache_dir)


def bench_prompts(
    dataset: str | PromptSet | None,
    count: int,
    input_len: int,
    *,
    seed: int = 0,
    template: ChatTemplate | None = None,
) -> list[str]:
    """`count` chat-formatted prompts from `dataset` (a name, or what bench_source gave).

    random (or None): synthetic random words, about input_len tokens (what bench_serving's
    random dataset is: noise to a drafter); chat: the shipped chat prompts padded by
    repeating the prompt or truncated to input_len words; any other set: its prompts as
    they are, in order, cycling when the level is longer than the set.
    """
    if count <= 0:
        return []
    source = bench_source(dataset) if isinstance(dataset, str) else dataset
    rng = random.Random(seed)
    if source is None:
        return [" ".join(_random_word(rng) for _ in range(input_len)) for _ in range(count)]
    tpl = template or ChatTemplate(BUILTIN_CHAT_TEMPLATE)
    out = []
    for prompt in take(source.prompts, count):
        text = _fit(prompt.split(), max(1, input_len - 1)) if source.fit_to_length else prompt
        # a distinct tag per request so prefix caching does not turn the level into hits
        out.append(tpl.render(f"[{rng.randrange(10**9)}] " + text, thinking=False))
    return out
