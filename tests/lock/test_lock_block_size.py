"""The drafter's block size read from its config.json at lock time, and the recipe checked
against it (`repro lock`, then `repro recipe check` with the lock)."""

from __future__ import annotations

import json

import pytest

from hubserver.fixtures import Project
from hubserver.server import HubFile
from repro.errors import RecipeError
from repro.hub import drafter_block_size, resolve_repo
from repro.lock import load_locked, read_lock
from repro.lock.locked import resolved
from repro.recipe import check_recipe

BLOCK = 8  # tests/hubserver/fixtures.py drafter_files: config.json {"block_size": 8}


def _recipe(project: Project, speculative: str) -> None:
    path = project.root / "recipes" / "small.yaml"
    lines = [
        speculative if ln.startswith("speculative:") else ln for ln in path.read_text().split("\n")
    ]
    path.write_text("\n".join(lines))


def test_lock_records_the_drafters_block_size(project: Project) -> None:
    result = project.lock()
    assert result.lock.drafter_block_size == BLOCK
    data = json.loads(project.lock_path().read_text())
    assert data["drafter_block_size"] == BLOCK


def test_lock_refuses_draft_tokens_that_disagree_with_the_drafter(project: Project) -> None:
    _recipe(project, "speculative: {algorithm: DFLASH, num_draft_tokens: 16}")
    with pytest.raises(RecipeError) as refused:
        project.lock()
    text = " ".join(refused.value.problems)
    assert "num_draft_tokens 16 disagrees with the locked drafter org/drafter" in text
    assert f"block_size {BLOCK}" in text
    assert not project.lock_path().exists()


def test_check_with_the_lock_uses_its_block_size(project: Project) -> None:
    """A recipe edited after its lock: the check against the lock names the mismatch, and a
    DDTREE budget without draft tokens set is judged against the locked block size."""
    lock = read_lock(project.lock().path)
    _recipe(project, "speculative: {algorithm: DFLASH, block_size: 16}")
    recipe = load_locked("small").recipe
    findings = [f for f in check_recipe(resolved(recipe, lock)) if f.rule == "drafter-block-size"]
    assert [(f.severity, f.path) for f in findings] == [("error", "speculative.block_size")]
    assert not [f for f in check_recipe(resolved(recipe)) if f.rule == "drafter-block-size"]

    _recipe(project, "speculative: {algorithm: DDTREE, ddtree_budget: 7}")
    recipe = load_locked("small").recipe
    spine = [f for f in check_recipe(resolved(recipe, lock)) if f.rule == "ddtree-spine"]
    assert len(spine) == 1 and f"block size {BLOCK} is spine mode (a chain)" in spine[0].message
    assert not [f for f in check_recipe(resolved(recipe)) if f.rule == "ddtree-spine"]


def test_block_size_nested_or_absent(project: Project) -> None:
    endpoint = project.hub.endpoint
    nested = b'{"dflash_config": {"block_size": 16}, "architectures": ["DFlashDraftModel"]}'
    project.hub.add_repo(
        "org/nested", [HubFile("config.json", nested), HubFile("model.safetensors", b"w" * 64)]
    )
    project.hub.add_repo(
        "org/eagle", [HubFile("config.json", b"{}"), HubFile("model.safetensors", b"w" * 64)]
    )
    pin = resolve_repo("org/nested", endpoint=endpoint)
    assert drafter_block_size(pin, endpoint=endpoint) == 16
    # both: the nested dflash_config wins, as SGLang reads it (dflash_utils.py)
    both = b'{"block_size": 8, "dflash_config": {"block_size": 16}}'
    project.hub.add_repo(
        "org/both", [HubFile("config.json", both), HubFile("model.safetensors", b"w" * 64)]
    )
    pin = resolve_repo("org/both", endpoint=endpoint)
    assert drafter_block_size(pin, endpoint=endpoint) == 16
    assert (
        drafter_block_size(resolve_repo("org/eagle", endpoint=endpoint), endpoint=endpoint) is None
    )


def test_lock_checks_the_drafters_architecture_against_the_images_sglang(
    project: Project,
) -> None:
    """z-lab's DFlash2 drafters (config.json architectures: DFlash2DraftModel) load only from
    SGLang 0.5.20: locking one for an older image is refused, naming the release."""
    config = b'{"block_size": 8, "architectures": ["DFlash2DraftModel"]}'
    project.hub.add_repo(
        "org/dflash2", [HubFile("config.json", config), HubFile("model.safetensors", b"w" * 64)]
    )
    recipe = project.root / "recipes" / "small.yaml"
    recipe.write_text(recipe.read_text().replace("org/drafter", "org/dflash2"))
    assert project.lock().lock.drafter_architectures == ["DFlash2DraftModel"]  # 0.5.23 loads it
    spec = project.root / "images" / "gpu.yaml"
    spec.write_text(spec.read_text().replace('"0.5.23"', '"0.5.17"'))
    with pytest.raises(RecipeError) as refused:
        project.lock()
    [problem] = refused.value.problems
    assert (
        "drafter: the locked drafter org/dflash2 is a DFlash2DraftModel, which SGLang 0.5.17 "
        "cannot load" in problem
    )
    assert "SGLang registers it from 0.5.20" in problem
    # the DFlash drafter of the other recipes loads on every release
    recipe.write_text(recipe.read_text().replace("org/dflash2", "org/drafter"))
    assert project.lock().lock.drafter_architectures is None  # its config names none
