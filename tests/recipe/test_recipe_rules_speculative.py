"""Speculative-decoding rules: each with a recipe that breaks it, and the shipped recipes that
follow SGLang's rules and the drafters' cards."""

from __future__ import annotations

import pytest

from repro.errors import RecipeError
from repro.lock.locked import resolved
from repro.recipe import check_recipe, load_recipe
from repro.recipe.images import catalog_for_recipe, load_image_spec
from repro.recipe.render import render_env, render_server_argv

from .conftest import DDTREE, DFLASH, Project, by_rule, load

DDTREE_16 = DDTREE.replace("ddtree_budget: 15}", "ddtree_budget: 15, num_draft_tokens: 16}")
SWEEP_256 = "bench: {concurrencies: [1, 32, 64, 128, 256], prompts_per_level: 256}\n"


# --- SGLang's cap of 48 running requests for speculative decoding ---------------------------
def test_unset_max_running_requests_warns_about_the_cap_of_48(project: Project) -> None:
    project.recipe("copy", "extends: kimi26-ep4-dflash\nserver: {max_running_requests: null}\n")
    [f] = by_rule(check_recipe(resolved(load_recipe("copy"))), "max-running-requests")
    assert f.severity == "warning" and f.path == "server.max_running_requests"
    assert "default of 48" in f.message and "levels 64, 128, 256" in f.message
    assert "speculative_hook.py" in f.message and "to 256" in f.message


def test_the_cap_is_silent_when_set_or_not_reached(project: Project) -> None:
    assert (
        by_rule(check_recipe(resolved(load_recipe("kimi26-ep4-dflash"))), "max-running-requests")
        == []
    )
    as_flag = load(
        project, DFLASH, SWEEP_256, "server: {extra_args: [--max-running-requests, '256']}\n"
    )
    assert by_rule(check_recipe(resolved(as_flag)), "max-running-requests") == []
    within = load(project, DFLASH, "bench: {concurrencies: [1, 48], prompts_per_level: 48}\n")
    assert by_rule(check_recipe(resolved(within)), "max-running-requests") == []
    autoregressive = load(project, SWEEP_256)
    assert by_rule(check_recipe(resolved(autoregressive)), "max-running-requests") == []


def test_shipped_speculative_recipes_render_max_running_requests(project: Project) -> None:
    for name in ("kimi26-ep4-dflash", "kimi26-ep4-dflash-long", "kimi26-tp8-dflash-b300"):
        recipe = load_recipe(name)
        argv = render_server_argv(recipe, catalog_for_recipe(recipe))
        assert argv[argv.index("--max-running-requests") + 1] == "256"


# --- DDTREE: spine mode and the pull request's constraints ----------------------------------
def test_ddtree_budget_below_the_block_size_is_spine_mode(project: Project) -> None:
    [f] = by_rule(check_recipe(resolved(load(project, DDTREE_16))), "ddtree-spine")
    assert f.severity == "warning" and f.path == "speculative.ddtree_budget"
    assert "spine mode (a chain)" in f.message and "block size 16" in f.message
    assert "sgl-project/sglang#29907" in f.message
    tree = load(project, DDTREE_16, "speculative: {ddtree_budget: 16}\n")
    assert by_rule(check_recipe(resolved(tree)), "ddtree-spine") == []


def test_ddtree_without_budget_is_a_chain(project: Project) -> None:
    recipe = load(project, DDTREE.replace(", ddtree_budget: 15", ""))
    [f] = by_rule(check_recipe(resolved(recipe)), "ddtree")
    assert f.severity == "warning" and "spine mode (a chain)" in f.message


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("[--page-size, '2']", "DDTREE requires --page-size 1, got 2"),
        (
            "[--speculative-use-rejection-sampling, --page-size, '1']",
            "DDTREE rejects --speculative-use-rejection",
        ),
    ],
)
def test_ddtree_pull_request_constraints(project: Project, extra: str, message: str) -> None:
    recipe = load(project, DDTREE, f"server: {{extra_args: {extra}}}\n")
    [f] = by_rule(check_recipe(resolved(recipe)), "patch-constraint")
    assert f.severity == "error" and f.path == "server.extra_args[0]"
    assert message in f.message and "sgl-project/sglang#29907" in f.message
    # The constraints are DDTREE's: plain DFLASH on the same image may set them.
    dflash = load(
        project, DFLASH, f"image: sglang-0.5.15-cu13-ddtree\nserver: {{extra_args: {extra}}}\n"
    )
    assert by_rule(check_recipe(resolved(dflash)), "patch-constraint") == []


def test_ddtree_accepts_what_the_pull_request_allows(project: Project) -> None:
    extra = "server: {extra_args: [--page-size, '1', --disable-overlap-schedule]}\n"
    assert by_rule(check_recipe(resolved(load(project, DDTREE, extra))), "patch-constraint") == []


def test_image_spec_declares_the_constraints(project: Project) -> None:
    spec = load_image_spec("sglang-0.5.15-cu13-ddtree", project.images)
    effects = {(c.option, c.effect, c.value) for c in spec.provides.constraints}
    assert {
        ("--speculative-use-rejection-sampling", "refuses", None),
        ("--page-size", "requires", 1),
        ("--disable-overlap-schedule", "forces", True),
    } <= effects  # all of them: tests/recipe/test_ddtree_constraints.py
    text = (project.images / "sglang-0.5.15-cu13-ddtree.yaml").read_text()
    project.write("bad.yaml", text.replace("effect: refuses", "effect: requires"), "images")
    with pytest.raises(RecipeError, match="requires, forces and minimum name a value"):
        load_image_spec("bad", project.images)


# --- DFLASH ---------------------------------------------------------------------------------
def test_draft_attention_backend_outside_dflash_choices_falls_back(project: Project) -> None:
    odd = load(project, DFLASH, "speculative: {draft_attention_backend: flashmla}\n")
    [f] = by_rule(check_recipe(resolved(odd)), "dflash")
    assert f.severity == "warning" and f.path == "speculative.draft_attention_backend"
    assert "silently falls back" in f.message and "intel_xpu" in f.message
    fa4 = load(project, DFLASH, "speculative: {draft_attention_backend: fa4}\n")
    assert by_rule(check_recipe(resolved(fa4)), "dflash") == []
    # Unset, the draft worker takes the target's backend.
    target = load(project, DFLASH, "server: {extra_args: [--attention-backend, trtllm_mla]}\n")
    [f] = by_rule(check_recipe(resolved(target)), "dflash")
    assert f.path == "server.extra_args[0]" and "'trtllm_mla'" in f.message


def test_nextn_is_eagle(project: Project) -> None:
    nextn = load(project, "drafter: {repo: org/mtp}\nspeculative: {algorithm: NEXTN}\n")
    assert by_rule(check_recipe(resolved(nextn)), "algorithm-in-image") == []
    argv = render_server_argv(nextn, catalog_for_recipe(nextn))
    assert argv[argv.index("--speculative-algorithm") + 1] == "NEXTN"
    typo = load(project, "drafter: {repo: org/mtp}\nspeculative: {algorithm: NEXTM}\n")
    assert by_rule(check_recipe(resolved(typo)), "algorithm-in-image")


# --- attention backend and GPU ----------------------------------------------------------------
def test_fa3_needs_hopper_or_older(project: Project) -> None:
    fa3 = "server: {extra_args: [--attention-backend, fa3]}\n"
    [f] = by_rule(check_recipe(resolved(load(project, fa3))), "attention-arch")
    assert f.severity == "error" and "RTX PRO 6000 (sm_120)" in f.message
    hopper = load(project, fa3, "topology: {gpu_models: [H100]}\n")
    assert by_rule(check_recipe(resolved(hopper)), "attention-arch") == []


# --- the shipped Qwen3.6-27B recipes ----------------------------------------------------------
QWEN = (
    "qwen36-27b-tp1-dflash",
    "qwen36-27b-tp1-dflash-ddtree",
    "qwen36-27b-tp1-dflash-ddtree-tree64",
)


@pytest.mark.parametrize("name", QWEN)
def test_qwen_recipes_carry_the_drafter_card(project: Project, name: str) -> None:
    recipe = load_recipe(name)
    argv = render_server_argv(recipe, catalog_for_recipe(recipe))

    def value(option: str) -> str:
        return argv[argv.index(option) + 1]

    assert "--trust-remote-code" in argv
    assert value("--mem-fraction-static") == "0.75"
    assert value("--mamba-radix-cache-strategy") == "extra_buffer"
    assert value("--speculative-num-draft-tokens") == "16"
    assert value("--max-running-requests") == "32"
    assert render_env(recipe)["SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"] == "1"


def test_qwen_ddtree_recipes_are_named_for_what_they_are(project: Project) -> None:
    chain = load_recipe("qwen36-27b-tp1-dflash-ddtree")
    [f] = by_rule(check_recipe(resolved(chain)), "ddtree-spine")
    assert "spine mode (a chain)" in f.message and "spine mode" in chain.description
    tree = load_recipe("qwen36-27b-tp1-dflash-ddtree-tree64")
    assert tree.speculative is not None and tree.speculative.ddtree_budget == 64
    assert by_rule(check_recipe(resolved(tree)), "ddtree-spine") == []
    assert "64.3 tok/s" in tree.description and "173.4" in tree.description
    plain = load_recipe("qwen36-27b-tp1-dflash")
    assert plain.speculative is not None and plain.speculative.algorithm == "DFLASH"


# --- where SGLang configures the model itself (issue 26: recipes that diverge from SGLang) ---
KIMI_DFLASH_B200 = (
    "model: {repo: moonshotai/Kimi-K2.6}\ntopology: {gpu_models: [B200], interconnect: nvlink}\n"
)


def test_kimi_dflash_on_sm100_without_a_draft_backend_falls_back(project: Project) -> None:
    """deepseek_v2.py gives Kimi trtllm_mla on sm_100; the draft worker replaces it."""
    bare = load(project, KIMI_DFLASH_B200, DFLASH)
    [f] = by_rule(check_recipe(resolved(bare)), "dflash")
    assert f.severity == "warning" and f.path == "speculative.draft_attention_backend"
    assert "trtllm_mla" in f.message and "model_overrides/deepseek_v2.py" in f.message
    assert "falls back to flashinfer" in f.message
    card = load(project, KIMI_DFLASH_B200, DFLASH, "speculative: {draft_attention_backend: fa4}\n")
    assert by_rule(check_recipe(resolved(card)), "dflash") == []
    pcie = load(project, "model: {repo: moonshotai/Kimi-K2.6}\n", DFLASH)  # RTX PRO 6000
    assert by_rule(check_recipe(resolved(pcie)), "dflash") == []


@pytest.mark.parametrize("name", ["kimi26-tp8-dflash-b200", "kimi26-tp8-dflash-b300"])
def test_blackwell_kimi_recipes_keep_the_drafter_card(project: Project, name: str) -> None:
    """z-lab/Kimi-K2.5-DFlash's card: trtllm_mla target, fa4 drafter, window 4096, 0.9."""
    recipe = load_recipe(name)
    argv = render_server_argv(recipe, catalog_for_recipe(recipe))
    for option, value in (
        ("--speculative-draft-attention-backend", "fa4"),
        ("--speculative-draft-window-size", "4096"),
        ("--mem-fraction-static", "0.9"),
        ("--attention-backend", "trtllm_mla"),
    ):
        assert argv[argv.index(option) + 1] == value
    assert by_rule(check_recipe(resolved(recipe)), "dflash") == []


def test_fa3_hint_for_qwen35_family_names_what_attention_registry_allows(
    project: Project,
) -> None:
    fa3 = "model: {repo: Qwen/Qwen3.6-27B}\nserver: {extra_args: [--attention-backend, fa3]}\n"
    [f] = by_rule(
        check_recipe(resolved(load(project, fa3))), "attention-arch"
    )  # RTX PRO 6000, sm_120
    assert f.message.endswith("use triton, trtllm_mha or flashinfer") and "fa4" not in f.message
    b200 = load(project, fa3, "topology: {gpu_models: [B200]}\n")
    [f] = by_rule(check_recipe(resolved(b200)), "attention-arch")
    assert f.message.endswith("use triton, trtllm_mha, fa4 or flashinfer")
    [f] = by_rule(
        check_recipe(resolved(load(project, fa3.replace("Qwen/Qwen3.6-27B", "org/m")))),
        "attention-arch",
    )
    assert f.message.endswith("use flashinfer, triton or fa4")


def test_ddtree_qwen35_family_on_b200_gets_page_size_64_from_sglang(project: Project) -> None:
    """model_overrides/qwen3_5.py sets trtllm_mha + page_size 64 on sm_100; DDTREE needs 1."""
    qwen_b200 = "model: {repo: Qwen/Qwen3.6-27B}\ntopology: {gpu_models: [B200]}\n"
    unset = "server: {extra_args: []}\n"
    [f] = by_rule(
        check_recipe(resolved(load(project, qwen_b200, DDTREE, unset))), "ddtree-page-size"
    )
    assert f.severity == "error" and "model_overrides/qwen3_5.py" in f.message
    assert "sgl-project/sglang#29907" in f.message and "page_size 64" in f.message
    triton = "server: {extra_args: [--attention-backend, triton]}\n"
    assert (
        by_rule(
            check_recipe(resolved(load(project, qwen_b200, DDTREE, triton))), "ddtree-page-size"
        )
        == []
    )
    rtx = "model: {repo: Qwen/Qwen3.6-27B}\n"  # sm_120: no such override
    assert (
        by_rule(check_recipe(resolved(load(project, rtx, DDTREE, unset))), "ddtree-page-size") == []
    )


# --- forced acceptance (SGLANG_SIMULATE_ACC_LEN) ---------------------------------------------
def test_forced_acceptance_renders_sglangs_environment(project: Project) -> None:
    forced = "speculative: {forced_acceptance: {length: 4, token_mode: real-draft-token}}\n"
    recipe = load(project, DFLASH, forced)
    env = render_env(recipe)
    assert env["SGLANG_SIMULATE_ACC_LEN"] == "4.0"
    assert env["SGLANG_SIMULATE_ACC_METHOD"] == "match-expected"
    assert env["SGLANG_SIMULATE_ACC_TOKEN_MODE"] == "real-draft-token"
    assert by_rule(check_recipe(resolved(recipe)), "forced-acceptance") == []


def test_forced_acceptance_set_through_env_is_refused(project: Project) -> None:
    recipe = load(project, DFLASH, "env: {SGLANG_SIMULATE_ACC_LEN: '4'}\n")
    [f] = by_rule(check_recipe(resolved(recipe)), "forced-acceptance")
    assert f.severity == "error" and f.path == "env.SGLANG_SIMULATE_ACC_LEN"
    assert "speculative.forced_acceptance" in f.message


def test_forced_acceptance_above_the_draft_tokens_warns(project: Project) -> None:
    recipe = load(
        project, DFLASH, "speculative: {num_draft_tokens: 8, forced_acceptance: {length: 12}}\n"
    )
    [f] = by_rule(check_recipe(resolved(recipe)), "forced-acceptance")
    assert f.severity == "warning" and "at most 8" in f.message


def test_forced_acceptance_method_outside_sglangs_is_refused(project: Project) -> None:
    with pytest.raises(RecipeError, match=r"forced_acceptance\.method"):
        load(project, DFLASH, "speculative: {forced_acceptance: {length: 2, method: mean}}\n")
