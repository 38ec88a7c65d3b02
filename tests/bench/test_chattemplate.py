"""Chat templates from the model's pinned commit, rendered in transformers' environment, with
the thinking switch each template reads, on both endpoints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from repro.bench.accept.runner import AcceptOptions, run_accept
from repro.bench.prompts.chattemplate import ChatTemplate, chat_template_for
from repro.bench.prompts.sets import bench_source
from repro.bench.sweep import BenchOptions, _bodies, run_bench
from repro.bench.target import BenchTarget
from repro.errors import ReproError
from repro.runfolder import RunFolder
from repro.schema.accept import TemplateUse
from repro.schema.recipe import Bench
from tests.support.simulator import DFLASH, Sim, Simulators

SHA = "0123456789abcdef0123456789abcdef01234567"
# Kimi K2.x's ending (moonshotai/Kimi-K2.5 chat_template.jinja): `thinking`, and transformers'
# extras ({% break %} from loopcontrols, tojson without HTML escaping)
KIMI = (
    "{%- for message in messages -%}"
    "{%- if loop.index > 8 %}{% break %}{% endif -%}"
    "<|im_{{ message['role'] }}|>{{ message['role'] }}<|im_middle|>{{ message['content'] }}"
    "<|im_end|>"
    "{%- endfor -%}"
    "{%- if tools %}{{ tools | tojson }}{% endif -%}"
    "{%- if add_generation_prompt -%}<|im_assistant|>assistant<|im_middle|>"
    "{%- if thinking is defined and thinking is false -%}<think></think>"
    "{%- else -%}<think>{%- endif -%}{%- endif -%}"
)
# Qwen3.x's ending (Qwen/Qwen3-8B chat_template): `enable_thinking`
QWEN = (
    "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content"
    " + '<|im_end|>\\n' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}"
    "{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- endif %}"
)
STYLES = {
    "org/kimi-like": (KIMI, "thinking", "<think></think>"),
    "org/qwen-like": (QWEN, "enable_thinking", "<think>\n\n</think>\n\n"),
}


def _snapshot(cache: Path, repo: str, files: dict[str, str]) -> Path:
    """A Hub cache holding `files` at commit SHA only (no refs/main: what `repro fetch` by
    SHA leaves)."""
    snap = cache / f"models--{repo.replace('/', '--')}" / "snapshots" / SHA
    snap.mkdir(parents=True)
    for name, text in files.items():
        (snap / name).write_text(text)
    return snap


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "hub"
    for repo, (source, _, _) in STYLES.items():
        _snapshot(root, repo, {"chat_template.jinja": source})
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    return root


@pytest.mark.parametrize("repo", sorted(STYLES))
def test_thinking_off_through_the_templates_own_switch(cache: Path, repo: str) -> None:
    _, switch, closed = STYLES[repo]
    template = chat_template_for(repo, SHA)
    assert template.switches == [switch] and str(cache) in template.origin
    assert template.render("hi", thinking=False).endswith(closed)
    assert not template.render("hi", thinking=True).endswith(closed)
    assert template.kwargs(False) == {switch: False}
    assert template.describe(False).thinking_switch == switch


@pytest.mark.parametrize("repo", sorted(STYLES))
def test_rendering_matches_transformers(cache: Path, repo: str) -> None:
    """The environment mirrors transformers 5.19.0's (the version SGLang 0.5.23 pins)."""
    from transformers.utils import chat_template_utils as utils  # deferred: a heavy import

    source, switch, _ = STYLES[repo]
    for thinking in (False, True):
        ours = chat_template_for(repo, SHA).render("a <b> & c", thinking=thinking)
        (theirs,), _ = utils.render_jinja_template(
            [[{"role": "user", "content": "a <b> & c"}]],
            chat_template=source,
            add_generation_prompt=True,
            **{switch: thinking},
        )
        assert ours == theirs


def test_a_missing_or_broken_template_is_an_error_naming_it(cache: Path, tmp_path: Path) -> None:
    with pytest.raises(ReproError, match=r"no chat template for org/kimi-like@main") as missing:
        chat_template_for("org/kimi-like", "main")  # the cache has the SHA, no refs/main
    assert "--chat-template-fallback" in (missing.value.hint or "")
    broken = _snapshot(cache, "org/broken", {"chat_template.jinja": "{% if %}"})
    with pytest.raises(ReproError, match=rf"chat template {broken}/chat_template.jinja does not"):
        chat_template_for("org/broken", SHA)
    raising = tmp_path / "raising"
    raising.mkdir()
    (raising / "tokenizer_config.json").write_text(
        json.dumps({"chat_template": "{{ raise_exception('system role not supported') }}"})
    )
    with pytest.raises(ReproError, match=r"tokenizer_config\.json failed to render: system role"):
        chat_template_for(str(raising)).render("hi")
    fallback = chat_template_for("org/kimi-like", "main", fallback=True)
    assert fallback.describe(False).fallback == (
        "no chat template for org/kimi-like@main in the local Hub cache"
    )


def _server(simulator: Simulators, repo: str) -> Sim:
    args = ["--model-path", repo, "--revision", SHA, *DFLASH]
    return simulator(args, {"REPRO_SIM_LOAD_SECONDS": "0", "REPRO_SIM_TIME_SCALE": "0.3"})


def _recipe(demo: Any, repo: str) -> Any:
    """The demo serving `repo` at SHA, thinking off in its accept plan."""
    model = demo.model.model_copy(update={"repo": repo, "revision": SHA})
    assert demo.accept.thinking is False
    return demo.model_copy(update={"model": model, "simulator": None})


@pytest.mark.parametrize("repo", sorted(STYLES))
def test_both_endpoints_send_the_same_workload_thinking_off(
    cache: Path, demo: Any, tmp_path: Path, repo: str, simulator: Simulators
) -> None:
    _, switch, closed = STYLES[repo]
    server = _server(simulator, repo)
    recipe = _recipe(demo, repo)
    try:
        for endpoint in ("generate", "chat"):
            opts = BenchOptions(
                url=server.url, concurrencies=[2], input_len=16, output_len=8, prompts=4,
                endpoint=endpoint, runs_dir=tmp_path / "runs",
            )  # fmt: skip
            result = run_bench(BenchTarget.from_recipe(recipe), opts)
            run = json.loads(RunFolder(result.run_dir).run_file.read_text())
            recorded = run["workload"]["chat_template"]
            assert recorded["thinking_switch"] == switch and recorded["thinking"] is False
            assert recorded["chat_template_kwargs"] == {switch: False}
            assert f"snapshots/{SHA}/chat_template.jinja" in recorded["source"]
            assert result.levels[0].completed == 4
        accept = AcceptOptions(
            urls=[server.url], prompt_sets=["math"], prompts=2, max_new_tokens=8,
            runs_dir=tmp_path / "runs",
        )  # fmt: skip
        (accepted,) = run_accept([BenchTarget.from_recipe(recipe)], accept)
        protocol = accepted.results.protocol
        assert protocol is not None and isinstance(protocol.chat_template, TemplateUse)
        assert protocol.chat_template.thinking_switch == switch
        assert protocol.thinking is False
    finally:
        server.stop()
    # what goes on the wire: rendered here with thinking off, or the switch for the server
    template = chat_template_for(repo, SHA)
    bench = Bench(input_len=16, output_len=8)
    chat_source = bench_source("chat")
    (generate,) = _bodies(bench, chat_source, "generate", "m", 1, 0, template)
    assert json.loads(generate)["text"].endswith(closed)
    (chat,) = _bodies(bench, chat_source, "chat", "m", 1, 0, template)
    doc = json.loads(chat)
    assert doc["chat_template_kwargs"] == {switch: False}
    assert "<|im_" not in doc["messages"][0]["content"]  # the server applies the template


def test_a_template_without_a_switch_sends_none(tmp_path: Path) -> None:
    plain = ChatTemplate("{{ messages[0]['content'] }}", origin="plain.jinja")
    assert plain.kwargs(False) == {} and plain.describe(False).thinking_switch is None
