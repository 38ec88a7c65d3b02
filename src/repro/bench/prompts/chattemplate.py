"""Chat templates rendered as SGLang renders them, from the model's pinned commit.

SGLang applies a chat template with transformers' `apply_chat_template` (transformers 5.19.0,
the version SGLang 0.5.23 pins), whose Jinja environment is built in
`transformers/utils/chat_template_utils.py` (`_cached_compile_jinja_template`): a sandboxed
environment with trim_blocks and lstrip_blocks, the `loopcontrols` extension (`{% break %}`,
`{% continue %}`), a `tojson` filter that does not escape HTML, and the globals
`raise_exception` and `strftime_now`; `render_jinja_template` passes `messages`, `tools`,
`documents`, `add_generation_prompt`, the tokenizer's special tokens and the chat template
kwargs. That environment is mirrored here rather than importing transformers, which would add
tokenizers, safetensors and regex (native wheels) to every install for twenty lines of Jinja
set-up; a test renders the same templates with transformers itself and compares.

The template comes from the revision the lock pins (else the recipe's) in the local Hub
cache, or from a local model directory: `chat_template.jinja`, `chat_template.json`, or
`chat_template` in `tokenizer_config.json` (transformers' order). A template that is not
there or does not compile is an error naming the file; `fallback=True` (the CLI's
`--chat-template-fallback`) uses the built-in ChatML instead and the record says so. A
simulated model without a template gets the simulator's ChatML, which is what the simulator
itself applies to chat messages.

The thinking switch is the variable the template reads: `thinking` (Kimi K2.x),
`enable_thinking` (Qwen3.x), both, or none (SGLang's own detection:
srt/parser/template_detection.py). `kwargs(thinking)` is what goes to the template when the
client renders (`/generate`) and as `chat_template_kwargs` on `/v1/chat/completions`, so both
endpoints measure the same workload.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2.ext
from huggingface_hub import try_to_load_from_cache
from jinja2 import TemplateError, meta
from jinja2.sandbox import ImmutableSandboxedEnvironment

from repro import fileread
from repro.errors import ReproError
from repro.hub.cache import hub_cache_dir
from repro.schema.accept import TemplateUse
from repro.schema.serverinfo import ServerInfo

BUILTIN_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n"
    "{% endif %}{% endif %}"
)
BUILTIN_ORIGIN = "built-in ChatML"
SIMULATOR_ORIGIN = "simulator ChatML (the simulator applies no model template)"
# the chat template kwargs that switch thinking, as template_detection.py's rules read them
THINKING_SWITCHES = ("thinking", "enable_thinking")
# the special tokens transformers passes to a template (SpecialTokensMixin's attributes)
SPECIAL_TOKENS = (
    "bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token",
)  # fmt: skip
TEMPLATE_FILES = ("chat_template.jinja", "chat_template.json", "tokenizer_config.json")
FALLBACK_HINT = (
    "run `repro fetch RECIPE` (the tokenizer files of the pinned commit), or pass "
    "--chat-template-fallback to render with the built-in ChatML (the record marks it)"
)


def _tojson(
    x: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    return json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _raise_exception(message: str) -> None:
    raise TemplateError(message)


def _strftime_now(format: str) -> str:
    return datetime.now().strftime(format)


def _environment() -> ImmutableSandboxedEnvironment:
    """transformers' chat template environment (chat_template_utils.py), without the
    `{% generation %}` tracker, which only matters for assistant-token masks: its tag is
    parsed and its body rendered as is."""
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[_GenerationTag, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


class _GenerationTag(jinja2.ext.Extension):
    """`{% generation %}...{% endgeneration %}` renders its body (transformers' tracker off)."""

    tags = {"generation"}  # noqa: RUF012 (jinja2's Extension API)

    def parse(self, parser: Any) -> Any:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body).set_lineno(lineno)


class ChatTemplate:
    """One compiled template, where it came from, and its thinking switch."""

    def __init__(
        self,
        source: str,
        *,
        special_tokens: dict[str, str] | None = None,
        origin: str = BUILTIN_ORIGIN,
        fallback: str | None = None,
    ):
        env = _environment()
        try:
            self._template = env.from_string(source)
            read = meta.find_undeclared_variables(env.parse(source))
        except TemplateError as exc:
            raise ReproError(
                f"chat template {origin} does not compile: {exc}",
                hint="check the file, or pass --chat-template-fallback to render with the "
                "built-in ChatML (the record marks it)",
            ) from None
        self.origin = origin
        self.fallback = fallback  # why the built-in template stands in, when it does
        self.switches = [name for name in THINKING_SWITCHES if name in read]
        self._tokens = special_tokens or {}

    def kwargs(self, thinking: bool | None) -> dict[str, bool]:
        """The chat template kwargs that set thinking on this template (none when it has no
        switch, or when thinking is left to the template's default)."""
        return {} if thinking is None else dict.fromkeys(self.switches, thinking)

    def render(self, prompt: str, *, thinking: bool | None = None) -> str:
        return self.render_messages([{"role": "user", "content": prompt}], thinking=thinking)

    def render_messages(
        self, messages: list[dict[str, str]], *, thinking: bool | None = None
    ) -> str:
        """A whole conversation (system, user and assistant turns), ready for the next answer."""
        try:
            return self._template.render(
                messages=messages,
                tools=None,
                documents=None,
                add_generation_prompt=True,
                **self._tokens,
                **self.kwargs(thinking),
            )
        except TemplateError as exc:
            raise ReproError(
                f"chat template {self.origin} failed to render: {exc}",
                hint="check the file, or pass --chat-template-fallback",
            ) from None

    def describe(self, thinking: bool | None) -> TemplateUse:
        """What the record keeps: the file, the switch and its value, the fallback."""
        return TemplateUse(
            source=self.origin,
            thinking_switch="+".join(self.switches) or None,
            thinking=thinking,
            chat_template_kwargs=self.kwargs(thinking),
            fallback=self.fallback,
        )


def _token_text(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _read_json(path: Path) -> dict[str, Any]:
    """A tokenizer or template JSON file (bounded read: one line naming the file if bad)."""
    doc = fileread.read_json(path)
    return doc if isinstance(doc, dict) else {}


def _named_default(source: Any) -> Any:
    if isinstance(source, list):  # named templates (tokenizer_config.json): take "default"
        return next((t.get("template") for t in source if t.get("name") == "default"), None)
    return source


def template_from_files(files: dict[str, Path]) -> ChatTemplate | None:
    """The template among a snapshot's files (name -> path), in transformers' order."""
    config = _read_json(files["tokenizer_config.json"]) if "tokenizer_config.json" in files else {}
    tokens = {k: t for k in SPECIAL_TOKENS if (t := _token_text(config.get(k))) is not None}
    if "chat_template.jinja" in files:
        path = files["chat_template.jinja"]
        source: Any = fileread.read_text(path)
    elif "chat_template.json" in files:
        path = files["chat_template.json"]
        source = _named_default(_read_json(path).get("chat_template"))
    elif "tokenizer_config.json" in files:
        path = files["tokenizer_config.json"]
        source = _named_default(config.get("chat_template"))
    else:
        return None
    if not isinstance(source, str):
        return None
    return ChatTemplate(source, special_tokens=tokens, origin=str(path))


def template_from_dir(snapshot: Path) -> ChatTemplate | None:
    files = {name: snapshot / name for name in TEMPLATE_FILES if (snapshot / name).is_file()}
    return template_from_files(files)


def _from_cache(repo: str, revision: str | None, cache_dir: Path | None) -> ChatTemplate | None:
    files = {}
    for name in TEMPLATE_FILES:
        hit = try_to_load_from_cache(
            repo, name, cache_dir=cache_dir or hub_cache_dir(), revision=revision
        )
        if isinstance(hit, str):
            files[name] = Path(hit)
    return template_from_files(files)


def chat_template_for(
    repo: str | None,
    revision: str | None = None,
    *,
    fallback: bool = False,
    simulated: bool = False,
    cache_dir: Path | None = None,
) -> ChatTemplate:
    """The model's template at `revision` (a local directory, else the local Hub cache; never
    downloads). Missing: the simulator's ChatML for a simulated server, the built-in ChatML
    with `fallback`, else a ReproError naming what was looked for."""
    found = None
    if repo:
        local = Path(repo)
        found = (
            template_from_dir(local) if local.is_dir() else _from_cache(repo, revision, cache_dir)
        )
    if found is not None:
        return found
    if simulated:
        return ChatTemplate(BUILTIN_CHAT_TEMPLATE, origin=SIMULATOR_ORIGIN)
    where = f"{repo}@{revision or 'main'}" if repo else "the server's model (unknown)"
    cache = f" at {cache_dir or hub_cache_dir()}" if repo else ""
    if fallback:
        return ChatTemplate(
            BUILTIN_CHAT_TEMPLATE, fallback=f"no chat template for {where} in the local Hub cache"
        )
    raise ReproError(
        f"no chat template for {where}: none of {', '.join(TEMPLATE_FILES)} (with a "
        f"chat_template) is in the local Hub cache{cache} at that commit",
        hint=FALLBACK_HINT,
    )


def recipe_template(
    model: Any, lock: Any, info: ServerInfo, *, simulated: bool, fallback: bool
) -> ChatTemplate:
    """The template a run renders with: the recipe model's at the commit its lock pins (else
    the recipe's revision); without a recipe model, the one of the model the server reports
    (`model_path`, `revision` of /server_info)."""
    if model is None:
        repo, revision = info.model_path, info.revision
    else:
        repo = model["repo"] if isinstance(model, dict) else model.repo
        asked = model.get("revision") if isinstance(model, dict) else model.revision
        revision = (lock.model.sha if lock is not None else None) or asked
    return chat_template_for(repo, revision, fallback=fallback, simulated=simulated)
