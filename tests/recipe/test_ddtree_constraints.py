"""The DDTree image declares every check of the pull request it applies, and check enforces
them: held against the PR head's constraint lines (tests/fixtures/ddtree-pr-29907)."""

from __future__ import annotations

import pytest

from repro.lock.locked import resolved
from repro.recipe import check_recipe, load_recipe
from repro.recipe.images import catalog_for_recipe, load_image_spec
from repro.recipe.render import render_server_argv

from .conftest import REPO_ROOT, Project, by_rule

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "ddtree-pr-29907" / "constraints.txt"
IMAGE = "sglang-0.5.15-cu13-ddtree"

# Each line of the fixture, and what the image spec must declare for it:
# (option, effect, value, when) of a constraint, or ("request", feature) of a rejection.
DECLARED_FOR = {
    "speculative_ddtree_budget < 1": ("--speculative-ddtree-budget", "minimum", 1, None),
    "speculative_use_rejection_sampling": (
        "--speculative-use-rejection-sampling",
        "refuses",
        None,
        None,
    ),
    "page_size != 1": ("--page-size", "requires", 1, None),
    "always": ("--disable-overlap-schedule", "forces", True, None),
    'full tree (speculative_ddtree_budget > block_size - 1) and prefill_backend != "triton"': (
        "--prefill-attention-backend",
        "requires",
        "triton",
        "full_tree",
    ),
    'full tree (speculative_ddtree_budget > block_size - 1) and decode_backend != "triton"': (
        "--decode-attention-backend",
        "requires",
        "triton",
        "full_tree",
    ),
    "full tree and cuda_graph_config.prefill.backend == TC_PIECEWISE": (
        "--cuda-graph-backend-prefill",
        "forces",
        "disabled",
        "full_tree",
    ),
    "batch.has_grammar": ("request", "grammar"),
    "batch.return_logprob": ("request", "logprobs"),
}


def fixture_conditions() -> list[str]:
    lines = [line for line in FIXTURE.read_text().splitlines() if not line.startswith("#")]
    return [line.split(" | ")[1] for line in lines if line.strip()]


def test_every_check_of_the_pr_head_is_declared_and_nothing_else() -> None:
    spec = load_image_spec(IMAGE, REPO_ROOT / "images")
    provides = spec.provides
    assert sorted(fixture_conditions()) == sorted(DECLARED_FOR)
    declared = {(c.option, c.effect, c.value, c.when) for c in provides.constraints}
    wanted = {v for v in DECLARED_FOR.values() if v[0] != "request"}
    assert declared == wanted
    assert {c.algorithm for c in provides.constraints} == {"DDTREE"}
    assert all("sgl-project/sglang#29907" in c.source for c in provides.constraints)
    assert sorted(provides.rejects_requests) == sorted(
        v[1] for v in DECLARED_FOR.values() if v[0] == "request"
    )
    # the base is the release the PR head was built on
    assert spec.sglang_version == "0.5.15" and spec.stand_in_catalog is None


SHIPPED_DDTREE = [
    "qwen36-27b-tp1-dflash-ddtree",
    "qwen36-27b-tp1-dflash-ddtree-tree64",
    "qwen36-27b-tp4-dflash-ddtree",
    "qwen36-27b-tp8-dflash-ddtree",
]


@pytest.mark.parametrize("name", SHIPPED_DDTREE)
def test_shipped_ddtree_recipes_start_on_the_base_the_pr_fits(name: str) -> None:
    recipe = load_recipe(name)
    assert recipe.image == IMAGE
    errors = [f for f in check_recipe(resolved(recipe)) if f.severity == "error"]
    assert errors == []
    argv = render_server_argv(recipe, catalog_for_recipe(recipe))
    assert argv[argv.index("--page-size") + 1] == "1"


def test_the_tree_runs_on_triton() -> None:
    recipe = load_recipe("qwen36-27b-tp1-dflash-ddtree-tree64")
    argv = render_server_argv(recipe, catalog_for_recipe(recipe))
    assert argv[argv.index("--attention-backend") + 1] == "triton"
    assert argv[argv.index("--speculative-ddtree-budget") + 1] == "64"
    assert "leak" not in recipe.description


def _errors(project: Project, name: str, text: str) -> list[str]:
    project.recipe(name, text)
    findings = by_rule(check_recipe(resolved(load_recipe(name))), "patch-constraint")
    return [f"{f.path}: {f.message}" for f in findings if f.severity == "error"]


def test_a_tree_on_flashinfer_is_refused_naming_the_pr(project: Project) -> None:
    errors = _errors(
        project,
        "tree-fi",
        "extends: qwen36-27b-tp1-dflash-ddtree\nspeculative: {ddtree_budget: 64}\n",
    )
    assert errors == [
        "server.extra_args[0]: DDTREE full-tree mode requires --prefill-attention-backend "
        "triton, got flashinfer (sgl-project/sglang#29907 (speculative_hook.py, _handle_ddtree))",
        "server.extra_args[0]: DDTREE full-tree mode requires --decode-attention-backend "
        "triton, got flashinfer (sgl-project/sglang#29907 (speculative_hook.py, _handle_ddtree))",
    ]
    # the chain (budget 15) on flashinfer is fine
    assert _errors(project, "chain", "extends: qwen36-27b-tp1-dflash-ddtree\n") == []


def test_an_unset_page_size_and_a_zero_budget_are_refused(project: Project) -> None:
    errors = _errors(
        project,
        "bare",
        "extends: qwen36-27b-tp1-dflash-ddtree\nspeculative: {ddtree_budget: null}\n"
        "server: {extra_args: [--speculative-ddtree-budget, '0']}\n",
    )
    assert any("--speculative-ddtree-budget >= 1, got 0" in e for e in errors), errors
    assert any(
        e.startswith(
            "server.extra_args: DDTREE requires --page-size 1, and checks the value "
            "before SGLang applies its default: set --page-size 1"
        )
        for e in errors
    ), errors


def test_a_tree_turns_piecewise_prefill_graphs_off_and_only_those(project: Project) -> None:
    tree = "extends: qwen36-27b-tp1-dflash-ddtree-tree64\nserver:\n  extra_args: [{}]\n"
    kept = "--attention-backend, triton, --page-size, '1', --cuda-graph-backend-prefill, "
    project.recipe("piecewise", tree.format(kept + "tc_piecewise"))
    [f] = by_rule(check_recipe(resolved(load_recipe("piecewise"))), "patch-constraint")
    assert f.severity == "warning"
    assert "DDTREE full-tree mode forces --cuda-graph-backend-prefill disabled" in f.message
    project.recipe("full", tree.format(kept + "full"))
    assert by_rule(check_recipe(resolved(load_recipe("full"))), "patch-constraint") == []
