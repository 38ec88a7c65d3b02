"""The Kimi K2.6 recipes follow current upstream practice: the RTX PRO 6000 ones run 0.5.23
with its PCIe all-reduce, the B300 ones SGLang's cookbook; the users' nightly baseline stays."""

from __future__ import annotations

import pytest

from repro.lock.locked import resolved
from repro.recipe import check_recipe, load_recipe
from repro.recipe.images import catalog_for_recipe
from repro.recipe.render import render_env, render_server_argv

from .conftest import Project, by_rule

PCIE_ALL_REDUCE = "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE"


@pytest.mark.parametrize(
    "name", ["kimi26-tp8", "kimi26-ep4", "kimi26-ep8", "kimi26-ep4-dflash", "kimi26-tp8-nograph"]
)
def test_rtx_tp8_and_ep_recipes_carry_the_pcie_all_reduce(name: str) -> None:
    recipe = load_recipe(name)
    assert recipe.image == "sglang-0.5.23-cu13"
    assert recipe.topology.interconnect == "pcie" and recipe.parallelism.tp == 8
    assert render_env(recipe)[PCIE_ALL_REDUCE] == "1"
    assert PCIE_ALL_REDUCE in catalog_for_recipe(recipe).env  # 0.5.23 reads it


@pytest.mark.parametrize(
    "name",
    [
        "kimi26-tp8-nightly",
        "kimi26-ep4-nightly",
        "kimi26-pp8",
        "kimi26-tp8-dflash-b200",
        "kimi26-tp8-b300",
    ],
)
def test_no_pcie_all_reduce_where_it_does_not_apply(name: str) -> None:
    """The nightly has none (0.5.22+), pp8 has no TP group, NVLink boxes have their own."""
    assert PCIE_ALL_REDUCE not in render_env(load_recipe(name))


def test_the_pcie_all_reduce_on_the_nightly_is_named_as_unread(project: Project) -> None:
    project.recipe("old", f"extends: kimi26-tp8-nightly\nenv: {{{PCIE_ALL_REDUCE}: '1'}}\n")
    [f] = by_rule(check_recipe(resolved(load_recipe("old"))), "env-known")
    assert f.severity == "warning" and f.path == f"env.{PCIE_ALL_REDUCE}"
    assert "is not read by SGLang 0.5.17" in f.message


def test_b300_recipes_follow_the_cookbook() -> None:
    names = ["kimi26-tp8-b300", "kimi26-tp8-eagle3-b300", "kimi26-tp8-dflash-b300"]
    for name in [*names, "kimi26-dpa8-b300"]:
        recipe = load_recipe(name)
        assert [f for f in check_recipe(resolved(recipe)) if f.severity == "error"] == []
        assert recipe.model.repo == "nvidia/Kimi-K2.6-NVFP4"
        assert recipe.topology.gpu_models == ["B300"]
        argv = render_server_argv(recipe, catalog_for_recipe(recipe))
        assert argv[argv.index("--quantization") + 1] == "modelopt_fp4"
    eagle = load_recipe("kimi26-tp8-eagle3-b300")
    assert eagle.drafter is not None and eagle.speculative is not None
    assert eagle.drafter.repo == "lightseekorg/kimi-k2.6-eagle3.1-mla"
    spec = eagle.speculative
    assert (spec.algorithm, spec.num_steps, spec.eagle_topk, spec.num_draft_tokens) == (
        "EAGLE3",
        3,
        1,
        4,
    )
    dflash = load_recipe("kimi26-tp8-dflash-b300")
    assert dflash.speculative is not None and dflash.speculative.algorithm == "DFLASH"
    dpa = load_recipe("kimi26-dpa8-b300")
    argv = render_server_argv(dpa, catalog_for_recipe(dpa))
    assert argv[argv.index("--attn-dp-size") + 1] == "8"


@pytest.mark.parametrize(
    "name",
    [
        "kimi26-ep4-dflash",
        "kimi26-ep4-dflash-long",
        "kimi26-tp8-dflash-b200",
        "kimi26-tp8-dflash-b300",
        "kimi26-tp8-eagle3-b300",
    ],
)
def test_kimi_acceptance_follows_z_labs_protocol_with_thinking_on(name: str) -> None:
    accept = load_recipe(name).accept
    assert accept is not None and accept.thinking is True


def test_kimi_instant_mode_is_a_named_variant() -> None:
    instant = load_recipe("kimi26-ep4-dflash-instant")
    assert instant.accept is not None and instant.accept.thinking is False
    assert instant.drafter == load_recipe("kimi26-ep4-dflash").drafter
