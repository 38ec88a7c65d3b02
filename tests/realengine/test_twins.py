"""Tiny twins of every shipped recipe's model and drafter, held against SGLang 0.5.23's code.

The twins are made once per session into a private Hub cache, with the engine's Python
(`.venv-sglang`), as `repro image tiny-model --like R` makes them.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.bench.prompts.chattemplate import chat_template_for
from repro.cli import main
from repro.realengine.engine import engine_python
from repro.realengine.twins import TwinError, Twins, ensure_all_twins, twin_for
from repro.recipe import load_recipe
from repro.recipe.loader import list_recipe_files
from repro.schema.recipe import Recipe
from tests.realengine.tensorfiles import shapes

pytestmark = pytest.mark.real_sglang


def _shipped() -> list[Recipe]:
    return [load_recipe(path) for path in list_recipe_files()]


def _one_per_pair(recipes: list[Recipe]) -> dict[tuple[str, str | None], Recipe]:
    """One recipe for each (model twin, drafter twin) pair the shipped recipes use."""
    pairs: dict[tuple[str, str | None], Recipe] = {}
    for recipe in recipes:
        spec = twin_for(recipe)
        pairs.setdefault((spec.model_repo, spec.drafter_repo), recipe)
    return pairs


@pytest.fixture(scope="session")
def twin_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("twin-hub")


@pytest.fixture(scope="session")
def all_twins(twin_cache: Path) -> dict[tuple[str, str | None], Twins]:
    """Every twin the shipped recipes need, made in one engine process and published."""
    pairs = _one_per_pair(_shipped())
    made = ensure_all_twins(list(pairs.values()), cache_dir=twin_cache)
    return dict(zip(pairs, made, strict=True))


def test_every_shipped_recipe_has_twins() -> None:
    recipes = _shipped()
    assert len(recipes) >= 21  # every kimi26-*, qwen36-*, qwen3-tiny-cpu and demo
    specs = {r.name: twin_for(r) for r in recipes}
    assert specs["kimi26-tp8"].model_kind == "kimi_k25" and specs["kimi26-tp8"].drafter_kind is None
    assert specs["kimi26-tp8-b300"].model_kind == "kimi_k25_nvfp4"
    assert specs["kimi26-tp8-eagle3-b300"].drafter_kind == "eagle3"
    kimi_dflash = specs["kimi26-ep4-dflash"]
    assert (kimi_dflash.drafter_kind, kimi_dflash.block_size) == ("dflash", 8)
    assert specs["qwen36-27b-tp1-dflash-ddtree"].model_kind == "qwen3_5"
    assert specs["qwen36-27b-tp1-dflash-ddtree"].block_size == 16
    assert (specs["demo"].model_kind, specs["demo"].block_size) == ("qwen3", 8)
    # a recipe with a drafter always gets a drafter twin
    assert all(specs[r.name].drafter_kind is not None for r in recipes if r.drafter)


def test_a_model_without_twin_is_refused_naming_the_field() -> None:
    other = load_recipe("kimi26-tp8").model_copy(deep=True)
    other.model.repo = "someone/Else-70B"
    with pytest.raises(TwinError, match=r"recipe kimi26-tp8: model.repo someone/Else-70B has no"):
        twin_for(other)


def _text(folder: Path) -> dict[str, object]:
    config = json.loads((folder / "config.json").read_text())
    return config.get("text_config", config)  # type: ignore[no-any-return]


def _captured(algorithm: str, ids: list[int]) -> list[int]:
    """Where SGLang 0.5.23 hooks the target ("before layer i") for a drafter's layer ids:
    DFLASH adds 1 to every id (set_dflash_layers_to_capture in models/qwen3.py,
    deepseek_v2.py, qwen3_vl.py for qwen3_5); EAGLE3 on a DeepSeek-V2/V3 target adds 1 only
    when the first id is 1 (set_eagle3_layers_to_capture in models/deepseek_v2.py)."""
    if algorithm == "dflash" or ids[0] == 1:
        return [i + 1 for i in ids]
    return list(ids)


def test_every_drafter_reads_target_layers_sglang_can_capture(
    all_twins: dict[tuple[str, str | None], Twins],
) -> None:
    drafters = [t for t in all_twins.values() if t.drafter_dir is not None]
    assert len(drafters) >= 5  # Kimi DFlash, Kimi-NVFP4 DFlash and EAGLE3, Qwen3.6, demo
    for twins in drafters:
        assert twins.drafter_dir is not None
        draft = json.loads((twins.drafter_dir / "config.json").read_text())
        target = _text(twins.model_dir)
        layers, hidden = int(target["num_hidden_layers"]), int(target["hidden_size"])  # type: ignore[call-overload]
        if "dflash_config" in draft:
            kind, ids = "dflash", draft["dflash_config"]["target_layer_ids"]
            fc = shapes(twins.drafter_dir / "model.safetensors")["fc.weight"]
        else:
            kind, ids = "eagle3", draft["eagle_config"]["eagle_aux_hidden_state_layer_ids"]
            fc = shapes(twins.drafter_dir / "model.safetensors")["fc.weight"]
        # a hook before a layer the target does not have captures nothing: the drafter
        # would get fewer features than its fc reads (the H100 run's feature dim mismatch)
        assert all(0 <= point < layers for point in _captured(kind, ids)), (twins, ids)
        assert fc == [hidden, len(ids) * hidden], twins
        assert draft["hidden_size"] == hidden and draft["vocab_size"] == target["vocab_size"]
        for name in ("tokenizer.json", "chat_template.jinja"):  # the target's, shared
            assert (twins.drafter_dir / name).read_bytes() == (twins.model_dir / name).read_bytes()


READ_WITH_SGLANG = """
import json, sys
from sglang.srt.configs.model_config import ModelConfig
from sglang.srt.model_loader.utils import get_model_architecture
from sglang.srt.speculative.dflash_utils import parse_dflash_draft_config
out = {}
for spec in sys.argv[1:]:
    path, role, quant = spec.split("|")
    config = ModelConfig(path, is_draft_model=role == "draft", quantization=quant or None)
    got = {"layers": config.num_hidden_layers, "quantization": config.quantization}
    try:
        got["class"] = get_model_architecture(config)[0].__name__
    except Exception as exc:
        got["class_error"] = str(exc)
    if role == "draft" and "DFlash" in config.hf_config.architectures[0]:
        parsed = parse_dflash_draft_config(draft_hf_config=config.hf_config)
        got["block_size"] = parsed.resolve_block_size(default=None)
    out[path] = got
print(json.dumps(out))
"""


def test_sglang_reads_every_twin_and_resolves_its_class(
    all_twins: dict[tuple[str, str | None], Twins],
) -> None:
    """SGLang 0.5.23's ModelConfig and model class resolution (what the engine dry-start
    runs) on every twin, in the engine's Python."""
    args, expect = [], {}
    for twins in all_twins.values():
        kind = twin_for_repo(twins.model_repo)
        quant = "modelopt_fp4" if kind == "kimi_k25_nvfp4" else ""
        args.append(f"{twins.model_dir}|model|{quant}")
        expect[str(twins.model_dir)] = kind
        if twins.drafter_dir is not None:
            args.append(f"{twins.drafter_dir}|draft|")
            expect[str(twins.drafter_dir)] = twins.drafter_repo
    done = subprocess.run(
        [str(engine_python()), "-c", READ_WITH_SGLANG, *sorted(set(args))],
        capture_output=True, text=True, timeout=300, check=False,
        env={"SGLANG_USE_CPU_ENGINE": "1", "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    read = json.loads(done.stdout.strip().splitlines()[-1])
    classes = {path: got.get("class") for path, got in read.items()}
    by_kind = {expect[path]: got for path, got in read.items()}
    assert by_kind["kimi_k25"]["class"] == "KimiK25ForConditionalGeneration"
    assert by_kind["kimi_k25_nvfp4"]["quantization"] == "modelopt_fp4"
    assert by_kind["kimi_k25_nvfp4"]["class"] == "KimiK25ForConditionalGeneration"
    assert by_kind["repro-twin/kimi-k2.6-nvfp4-eagle3"]["class"] == "Eagle3DeepseekV2ForCausalLM"
    assert by_kind["repro-twin/kimi-k2.6-dflash-b8"]["block_size"] == 8
    assert by_kind["repro-twin/qwen3.6-27b-dflash-b16"]["block_size"] == 16
    # Qwen3.6's class does not import on the CPU engine (docs/real-engine.md): its module
    # reads torch.ops.sgl_kernel.fused_sigmoid_mul_cpu at import (models/qwen3_5.py)
    assert by_kind["qwen3_5"]["layers"] == 4
    assert "Qwen3_5ForConditionalGeneration" in by_kind["qwen3_5"]["class_error"]
    assert sum(c is not None for c in classes.values()) == len(classes) - 1


def twin_for_repo(repo: str) -> str:
    from repro.realengine.twins import MODEL_TWINS

    (kind,) = {t.kind for t in MODEL_TWINS.values() if t.repo == repo}
    return kind


@pytest.mark.parametrize(
    ("recipe", "switch"),
    [("kimi26-ep4-dflash", "thinking"), ("qwen36-27b-tp1-dflash", "enable_thinking")],
)
def test_accept_finds_a_twins_chat_template_by_repo_and_revision(
    all_twins: dict[tuple[str, str | None], Twins], twin_cache: Path, recipe: str, switch: str
) -> None:
    """`repro accept` reads the template of repo@revision from the Hub cache: a published twin
    has one, with its real model's thinking switch."""
    spec = twin_for(load_recipe(recipe))
    template = chat_template_for(spec.model_repo, "main", cache_dir=twin_cache)
    assert template.switches == [switch]
    assert template.origin.endswith("chat_template.jinja")
    off = template.render("hello", thinking=False)
    assert off != template.render("hello", thinking=True) and "hello" in off


def test_the_same_seed_publishes_the_same_commit(
    all_twins: dict[tuple[str, str | None], Twins], tmp_path: Path
) -> None:
    """A second cache, the same seed: byte-identical files, so the same commits; the CLI
    reports them."""
    recipe = "kimi26-tp8-eagle3-b300"
    spec = twin_for(load_recipe(recipe))
    res = CliRunner().invoke(
        main, ["image", "tiny-model", "--like", recipe, "--cache-dir", str(tmp_path), "--json"]
    )
    assert res.exit_code == 0, res.output
    made = json.loads(res.stdout)
    first = all_twins[(spec.model_repo, spec.drafter_repo)]
    assert Path(made["model_dir"]).name == first.model_dir.name
    assert Path(made["drafter_dir"]).name == first.drafter_dir.name  # type: ignore[union-attr]
    assert made["model_repo"] == "repro-twin/kimi-k2.6-nvfp4"


HF_NAMES = """
import json, sys, torch
from safetensors import safe_open
from transformers import AutoConfig, AutoModelForImageTextToText
with torch.device("meta"):
    model = AutoModelForImageTextToText.from_config(AutoConfig.from_pretrained(sys.argv[1]))
with safe_open(sys.argv[1] + "/model.safetensors", "pt") as f:
    twin = {k: list(f.get_slice(k).get_shape()) for k in f.keys()}
hf = {k: list(v.shape) for k, v in model.state_dict().items() if not k.startswith("model.visual.")}
print(json.dumps({"class": type(model).__name__, "twin": twin, "hf": hf}))
"""


def test_the_qwen36_twin_has_the_checkpoint_names_of_transformers_own_class(
    all_twins: dict[tuple[str, str | None], Twins],
) -> None:
    """SGLang's qwen3_5 class cannot be built on this CPU engine (above), so the twin's
    tensors are held against transformers' own Qwen3_5ForConditionalGeneration, whose
    save_pretrained wrote the real checkpoint: the same names and shapes, vision apart."""
    (twins,) = [t for t in all_twins.values() if t.model_repo == "repro-twin/qwen3.6-27b"]
    done = subprocess.run(
        [str(engine_python()), "-c", HF_NAMES, str(twins.model_dir)],
        capture_output=True, text=True, timeout=300, check=False,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    read = json.loads(done.stdout.strip().splitlines()[-1])
    assert read["class"] == "Qwen3_5ForConditionalGeneration"
    assert read["twin"] == read["hf"]
    assert any(".linear_attn.in_proj_qkv." in name for name in read["twin"])
