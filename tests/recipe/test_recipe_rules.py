"""Each cross-field rule: a recipe that breaks it gets a finding naming file and field."""

from __future__ import annotations

import pytest

from repro.lock.locked import resolved
from repro.recipe import check_recipe

from .conftest import BASE_RECIPE, DDTREE, DFLASH, Project, by_rule, load


def test_base_recipe_is_clean(project: Project) -> None:
    assert check_recipe(resolved(load(project))) == []


# --- GPUs needed = tp x pp (x dp without dp_attention) ----------------------------------------
@pytest.mark.parametrize(
    ("parallelism", "needed"),
    [
        ("{tp: 8}", 8),
        ("{tp: 4, pp: 2}", 8),
        ("{tp: 4, dp: 2}", 8),
        ("{tp: 4, dp: 4, dp_attention: true}", 4),
        ("{tp: 8, pp: 2}", 16),
        ("{tp: 2, pp: 2, dp: 3}", 12),
    ],
)
def test_gpus_needed(project: Project, parallelism: str, needed: int) -> None:
    recipe = load(project, f"parallelism: {parallelism}\ntopology: {{gpus: {needed}}}\n")
    assert recipe.parallelism.gpus_needed == needed
    assert by_rule(check_recipe(resolved(recipe)), "gpus-needed") == []
    short = load(project, f"parallelism: {parallelism}\ntopology: {{gpus: {needed - 1}}}\n")
    [finding] = by_rule(check_recipe(resolved(short)), "gpus-needed")
    assert finding.severity == "error"
    assert finding.path == "topology.gpus"
    assert finding.file == "recipes/r.yaml"
    assert f"needs {needed} GPUs" in finding.message


def test_gpus_needed_counts_nodes(project: Project) -> None:
    recipe = load(project, "parallelism: {tp: 16}\ntopology: {gpus: 8, nodes: 2}\n")
    assert by_rule(check_recipe(resolved(recipe)), "gpus-needed") == []
    recipe = load(project, "parallelism: {tp: 16}\ntopology: {gpus: 8, nodes: 1}\n")
    assert by_rule(check_recipe(resolved(recipe)), "gpus-needed")


def test_ep_divides_tp(project: Project) -> None:
    assert (
        by_rule(check_recipe(resolved(load(project, "parallelism: {ep: 4}\n"))), "ep-divides-tp")
        == []
    )
    [f] = by_rule(check_recipe(resolved(load(project, "parallelism: {ep: 3}\n"))), "ep-divides-tp")
    assert f.path == "parallelism.ep" and "must divide tp 8" in f.message
    assert by_rule(
        check_recipe(resolved(load(project, "parallelism: {ep: 16}\n"))), "ep-divides-tp"
    )


def test_dp_attention_width_divides_tp(project: Project) -> None:
    ok = load(project, "parallelism: {dp: 4, dp_attention: true}\n")
    assert by_rule(check_recipe(resolved(ok)), "dp-attention") == []
    [f] = by_rule(
        check_recipe(resolved(load(project, "parallelism: {dp: 3, dp_attention: true}\n"))),
        "dp-attention",
    )
    assert f.severity == "error" and f.path == "parallelism.dp"
    [w] = by_rule(
        check_recipe(resolved(load(project, "parallelism: {dp_attention: true}\n"))), "dp-attention"
    )
    assert w.severity == "warning"


# --- DFLASH ---------------------------------------------------------------------------------


def test_dflash_valid(project: Project) -> None:
    assert check_recipe(resolved(load(project, DFLASH))) == []


def test_dflash_needs_drafter(project: Project) -> None:
    [f] = by_rule(
        check_recipe(resolved(load(project, "speculative: {algorithm: DFLASH}\n"))), "dflash"
    )
    assert f.path == "drafter" and "needs a drafter" in f.message


def test_dflash_needs_pp1(project: Project) -> None:
    recipe = load(project, DFLASH, "parallelism: {tp: 4, pp: 2}\n")
    [f] = by_rule(check_recipe(resolved(recipe)), "dflash")
    assert f.path == "parallelism.pp"


def test_dflash_block_size_and_draft_tokens_agree(project: Project) -> None:
    agree = load(project, DFLASH, "speculative: {block_size: 16, num_draft_tokens: 16}\n")
    assert by_rule(check_recipe(resolved(agree)), "dflash") == []
    differ = load(project, DFLASH, "speculative: {block_size: 16, num_draft_tokens: 8}\n")
    [f] = by_rule(check_recipe(resolved(differ)), "dflash")
    assert f.path == "speculative.block_size" and "must agree" in f.message


def test_dflash_forces_topk_one(project: Project) -> None:
    recipe = load(project, DFLASH, "speculative: {eagle_topk: 4}\n")
    [f] = by_rule(check_recipe(resolved(recipe)), "dflash")
    assert f.severity == "warning" and f.path == "speculative.eagle_topk"


# --- DDTREE ---------------------------------------------------------------------------------


def test_ddtree_valid_on_the_patched_image(project: Project) -> None:
    assert check_recipe(resolved(load(project, DDTREE))) == []


def test_ddtree_needs_budget(project: Project) -> None:
    recipe = load(project, DDTREE.replace(", ddtree_budget: 15", ""))
    [f] = by_rule(check_recipe(resolved(recipe)), "ddtree")
    assert f.path == "speculative.ddtree_budget"


def test_ddtree_needs_an_image_that_provides_it(project: Project) -> None:
    recipe = load(project, DDTREE.replace("sglang-0.5.15-cu13-ddtree", "sglang-nightly-cu13"))
    [f] = by_rule(check_recipe(resolved(recipe)), "algorithm-in-image")
    assert f.path == "speculative.algorithm"
    assert "does not provide DDTREE" in f.message
    assert "sglang-0.5.15-cu13-ddtree" in f.message  # where to find it


def test_unknown_algorithm_gets_did_you_mean(project: Project) -> None:
    recipe = load(project, "drafter: {repo: org/d}\nspeculative: {algorithm: EAGEL3}\n")
    [f] = by_rule(check_recipe(resolved(recipe)), "algorithm-in-image")
    assert "did you mean 'EAGLE3'" in f.message


def test_drafter_without_speculative_is_unused(project: Project) -> None:
    [f] = by_rule(check_recipe(resolved(load(project, "drafter: {repo: org/d}\n"))), "drafter-used")
    assert f.severity == "warning" and f.path == "drafter"


# --- topology -------------------------------------------------------------------------------
def test_gpu_memory_below_minimum(project: Project) -> None:
    recipe = load(project, "topology: {min_gpu_memory_gb: 141}\n")
    [f] = by_rule(check_recipe(resolved(recipe)), "gpu-models")
    assert f.severity == "error" and f.path == "topology.gpu_models[0]"
    assert "96 GB" in f.message


@pytest.mark.parametrize(
    ("model", "memory"), [("B200", 180), ("B300", 288), ("H200", 141), ("H100", 80)]
)
def test_known_gpu_memory(project: Project, model: str, memory: int) -> None:
    recipe = load(
        project, f"topology: {{gpu_models: [NVIDIA {model}], min_gpu_memory_gb: {memory}}}\n"
    )
    assert by_rule(check_recipe(resolved(recipe)), "gpu-models") == []
    recipe = load(
        project, f"topology: {{gpu_models: [{model}], min_gpu_memory_gb: {memory + 1}}}\n"
    )
    assert by_rule(check_recipe(resolved(recipe)), "gpu-models")


def test_unknown_gpu_model_warns(project: Project) -> None:
    [f] = by_rule(
        check_recipe(resolved(load(project, "topology: {gpu_models: [MI300X]}\n"))), "gpu-models"
    )
    assert f.severity == "warning" and "min_gpu_memory_gb" in f.message


def test_a_gpu_of_several_memory_sizes_warns_yet_its_architecture_is_checked(
    project: Project,
) -> None:
    """The doctor's GPU table is the rules' too: an A100 (40 or 80 GB) has no one memory size,
    but it is sm_80, which an image built for sm_90 and up lacks."""
    recipe = load(project, "topology: {gpu_models: [NVIDIA A100-SXM4-80GB]}\n")
    findings = check_recipe(resolved(recipe))
    [memory] = by_rule(findings, "gpu-models")
    assert memory.severity == "warning" and "no one memory size" in memory.message
    [arch] = by_rule(findings, "image-arch")
    assert arch.path == "topology.gpu_models[0]" and "sm_80" in arch.message


def test_kimi_weights_do_not_fit_half_the_box(project: Project) -> None:
    fits = load(project, "model: {repo: moonshotai/Kimi-K2.6}\n")
    assert by_rule(check_recipe(resolved(fits)), "weights-fit") == []
    half = load(
        project, "model: {repo: moonshotai/Kimi-K2.6}\nparallelism: {tp: 4, ep: 4, dp: 2}\n"
    )
    [f] = by_rule(check_recipe(resolved(half)), "weights-fit")
    assert f.severity == "warning" and "595 GB" in f.message and "4 GPUs x 96 GB" in f.message


def test_image_must_carry_the_gpu_architecture(project: Project) -> None:
    project.write(
        "old.yaml",
        (project.images / "sglang-nightly-cu13.yaml")
        .read_text()
        .replace('["9.0", "10.0", "10.3", "12.0"]', '["9.0"]'),
        folder="images",
    )
    recipe = load(project, "image: old\n")
    [f] = by_rule(check_recipe(resolved(recipe)), "image-arch")
    assert f.path == "topology.gpu_models[0]" and "sm_120" in f.message


def test_simulated_image_needs_no_gpu_runtime(project: Project) -> None:
    recipe = load(project, "image: sim\n")
    found = {f.path for f in by_rule(check_recipe(resolved(recipe)), "simulated")}
    assert found == {"topology.gpu_runtime", "topology.gpus", "simulator"}


def test_gpu_image_refuses_simulator_settings(project: Project) -> None:
    recipe = load(project, "topology: {gpu_runtime: none}\nsimulator: {profile: demo}\n")
    found = {f.path for f in by_rule(check_recipe(resolved(recipe)), "simulated")}
    assert found == {"topology.gpu_runtime", "simulator"}


# --- bench, env, name -----------------------------------------------------------------------
def test_bench_fits_context(project: Project) -> None:
    recipe = load(
        project, "server: {context_length: 1000}\nbench: {input_len: 900, output_len: 200}\n"
    )
    [f] = by_rule(check_recipe(resolved(recipe)), "bench")
    assert f.path == "bench.input_len" and f.severity == "error"


def test_bench_random_prompts_with_a_drafter_warns(project: Project) -> None:
    recipe = load(project, DFLASH.replace("bench: {dataset: chat}\n", "bench: {dataset: random}\n"))
    [f] = by_rule(check_recipe(resolved(recipe)), "bench")
    assert f.path == "bench.dataset" and "chat" in f.message


def test_bench_levels_reachable(project: Project) -> None:
    recipe = load(
        project,
        "server: {max_running_requests: 4}\nbench: {concurrencies: [8], prompts_per_level: 4}\n",
    )
    paths = {f.path for f in by_rule(check_recipe(resolved(recipe)), "bench")}
    assert paths == {"bench.concurrencies", "bench.prompts_per_level"}


def test_env_knob_misspelled(project: Project) -> None:
    recipe = load(project, DDTREE, "env: {SGLANG_DDTREE_MAX_TOPKK: 8}\n")
    [f] = by_rule(check_recipe(resolved(recipe)), "env-known")
    assert f.path == "env.SGLANG_DDTREE_MAX_TOPKK" and "SGLANG_DDTREE_MAX_TOPK'" in f.message
    ok = load(project, DDTREE, "env: {SGLANG_DDTREE_MAX_TOPK: 8}\n")
    assert by_rule(check_recipe(resolved(ok)), "env-known") == []
    assert ok.env == {"SGLANG_DDTREE_MAX_TOPK": "8"}


def test_name_matches_file(project: Project) -> None:
    [f] = by_rule(check_recipe(resolved(load(project, "name: other\n"))), "name")
    assert f.severity == "warning" and f.path == "name"


def test_finding_in_a_parent_names_the_parent_file(project: Project) -> None:
    recipe = load(project, "", base=BASE_RECIPE.replace("{gpus: 8,", "{gpus: 4,"))
    [f] = by_rule(check_recipe(resolved(recipe)), "gpus-needed")
    assert f.file == "recipes/base.yaml"
    assert str(f).startswith("recipes/base.yaml: topology.gpus: the deployment needs 8 GPUs")
