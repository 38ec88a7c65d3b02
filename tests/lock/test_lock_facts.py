"""The model's and drafter's config.json read at lock time: a drafter for another model is
refused by `repro lock`, and `recipe check` with the lock judges TP against the heads."""

from __future__ import annotations

import json

import pytest

from hubserver.fixtures import Project, drafter_files, model_files
from hubserver.repos import HubFile
from repro.errors import RecipeError
from repro.lock import load_locked, read_lock
from repro.lock.locked import resolved
from repro.recipe import check_recipe

KIMI = {"architectures": ["DeepseekV3ForCausalLM"], "vocab_size": 163840, "hidden_size": 7168}
QWEN_DRAFTER = {"architectures": ["DFlashDraftModel"], "vocab_size": 151936, "hidden_size": 4096}


def _with_config(files: list[HubFile], config: dict[str, object]) -> list[HubFile]:
    rest = [f for f in files if f.path != "config.json"]
    return [HubFile("config.json", json.dumps(config).encode()), *rest]


def _use(project: Project, drafter: dict[str, object]) -> None:
    project.hub.add_repo(
        "org/kimi", _with_config(model_files(), {**KIMI, "num_attention_heads": 64})
    )
    project.hub.add_repo("org/fit", _with_config(drafter_files(), drafter))
    recipe = project.root / "recipes" / "small.yaml"
    text = recipe.read_text().replace("org/model", "org/kimi").replace("org/drafter", "org/fit")
    recipe.write_text(text)


def test_lock_refuses_a_drafter_for_another_model(project: Project) -> None:
    _use(project, {**QWEN_DRAFTER, "block_size": 8})
    with pytest.raises(RecipeError) as refused:
        project.lock()
    text = " ".join(refused.value.problems)
    assert "drafter org/fit does not fit model org/kimi" in text
    assert "vocab_size 151936 vs 163840, hidden_size 4096 vs 7168" in text
    assert "config.json at the locked commits" in text
    assert not project.lock_path().exists()


def test_a_fitting_drafter_locks_and_check_judges_tp_by_the_locked_heads(
    project: Project,
) -> None:
    _use(project, {"vocab_size": 163840, "hidden_size": 7168, "block_size": 8})
    lock = read_lock(project.lock().path)
    data = json.loads(project.lock_path().read_text())
    assert data["model_facts"]["num_attention_heads"] == 64
    assert (data["drafter_facts"]["hidden_size"], data["drafter_facts"]["vocab_size"]) == (
        7168,
        163840,
    )
    recipe = project.root / "recipes" / "small.yaml"
    recipe.write_text(
        recipe.read_text().replace("{tp: 1}", "{tp: 3}").replace("{gpus: 1}", "{gpus: 3}")
    )
    findings = check_recipe(resolved(load_locked("small").recipe, lock))
    [heads] = [f for f in findings if f.rule == "tp-divides-heads"]
    assert heads.severity == "error" and heads.path == "parallelism.tp"
    assert "64 attention heads (config.json at the locked commits)" in heads.message
