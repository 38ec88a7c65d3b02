"""Prompts: the shipped prompt sets (math, code, chat), JSONL files, bench datasets, and chat
templates rendered with jinja2 (no transformers).

A prompt-set JSONL file holds one JSON object a line with the prompt under `prompt` (or
`text`, `question`, `instruction`), or a plain JSON string a line.

Chat template: the model snapshot's own (`chat_template.jinja`, or `chat_template` in
`tokenizer_config.json`) when it is in the local Hub cache or a local directory; otherwise
the built-in ChatML-like template below (`<|im_start|>role\\n...<|im_end|>`), the format of
Qwen and many others. Templates see `messages`, `add_generation_prompt`, `enable_thinking`,
`bos_token`, `eos_token` and `raise_exception`, as transformers' apply_chat_template.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from repro.errors import ReproError

SHIPPED_SETS = ("math", "code", "chat")
_PROMPT_KEYS = ("prompt", "text", "question", "instruction")

BUILTIN_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n"
    "{% endif %}{% endif %}"
)


@dataclass
class PromptSet:
    name: str
    prompts: list[str]


def _read_jsonl(text: str, where: str) -> list[str]:
    prompts = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ReproError(f"{where}:{n}: not JSON ({exc.msg})") from None
        if isinstance(row, str):
            prompts.append(row)
            continue
        value = next((row[k] for k in _PROMPT_KEYS if isinstance(row, dict) and k in row), None)
        if not isinstance(value, str):
            raise ReproError(
                f"{where}:{n}: no prompt field",
                hint=f"each line is a JSON string or an object with one of {list(_PROMPT_KEYS)}",
            )
        prompts.append(value)
    return prompts


def load_prompt_set(ref: str) -> PromptSet:
    """A shipped set by name, or a JSONL file path. Raises ReproError for an empty set."""
    if ref in SHIPPED_SETS:
        text = resources.files("repro.bench").joinpath(f"prompts/{ref}.jsonl").read_text("utf-8")
        prompts, name = _read_jsonl(text, f"prompts/{ref}.jsonl"), ref
    elif ref.startswith("hf:"):
        raise ReproError(
            f"{ref}: Hub datasets are not supported yet",
            hint='export the column to a JSONL file ({"prompt": ...} per line) and pass its path',
        )
    else:
        path = Path(ref)
        if not path.is_file():
            raise ReproError(
                f"prompt set {ref!r} is neither a shipped set nor a file",
                hint=f"use one of {', '.join(SHIPPED_SETS)} or a path to a .jsonl file",
            )
        prompts, name = _read_jsonl(path.read_text(encoding="utf-8"), str(path)), path.stem
    prompts = [p for p in prompts if p.strip()]
    if not prompts:
        raise ReproError(f"prompt set {ref!r} is empty", hint="give it at least one prompt")
    return PromptSet(name, prompts)


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
            config = json.loads(config_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            config = {}
    source = jinja.read_text(encoding="utf-8") if jinja.is_file() else config.get("chat_template")
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


def bench_prompts(
    dataset: str,
    count: int,
    input_len: int,
    *,
    seed: int = 0,
    template: ChatTemplate | None = None,
) -> list[str]:
    """`count` prompts of about `input_len` tokens (counted as words).

    random: synthetic random words (what bench_serving's random dataset is: noise to a
    drafter); chat: the shipped chat prompts, chat-formatted, padded by repeating the
    prompt or truncated to input_len words.
    """
    if count <= 0:
        return []
    rng = random.Random(seed)
    if dataset == "random":
        return [" ".join(_random_word(rng) for _ in range(input_len)) for _ in range(count)]
    if dataset == "chat":
        base = load_prompt_set("chat").prompts
        tpl = template or ChatTemplate(BUILTIN_CHAT_TEMPLATE)
        out = []
        for i in range(count):
            words = base[i % len(base)].split()
            # a distinct tag per request so prefix caching does not turn the level into hits
            body = f"[{rng.randrange(10**9)}] " + _fit(words, max(1, input_len - 1))
            out.append(tpl.render(body, thinking=False))
        return out
    raise ReproError(
        f"dataset {dataset!r} needs a local file that repro does not download",
        hint="use dataset: random or chat in the recipe's bench section",
    )
