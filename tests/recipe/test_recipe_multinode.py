"""Multi-node recipes: per-node options rendered with the catalog's names, and the tp x pp
check against GPUs per node x nodes (rule nodes-split)."""

from __future__ import annotations

import pytest

from repro.errors import RecipeError
from repro.lock.locked import resolved
from repro.recipe import check_recipe, render_server_argv
from repro.recipe.images import catalog_for_recipe
from repro.recipe.render import render_node_argv

from .conftest import Project
from .test_recipe_rules import by_rule, load


def test_node_argv_adds_rank_and_rendezvous(project: Project) -> None:
    recipe = load(project, "parallelism: {tp: 16}\ntopology: {gpus: 8, nodes: 2}\n")
    catalog = catalog_for_recipe(recipe)
    single = render_server_argv(recipe, catalog)
    assert single[single.index("--nnodes") + 1] == "2"
    argv = render_node_argv(recipe, catalog, node_rank="1", dist_init_addr="10.0.0.1:20000")
    at = argv.index("--nnodes")
    assert argv[at : at + 6] == [
        "--nnodes",
        "2",
        "--node-rank",
        "1",
        "--dist-init-addr",
        "10.0.0.1:20000",
    ]
    assert argv[:at] + argv[at + 6 :] == single[:at] + single[at + 2 :]
    # Placeholders a cluster expands pass through untouched; nnodes can be one too.
    lws = render_node_argv(
        recipe,
        catalog,
        node_rank="$(LWS_WORKER_INDEX)",
        dist_init_addr="$(LWS_LEADER_ADDRESS):20000",
        nnodes="$(LWS_GROUP_SIZE)",
    )
    assert lws[at : at + 4] == [
        "--nnodes",
        "$(LWS_GROUP_SIZE)",
        "--node-rank",
        "$(LWS_WORKER_INDEX)",
    ]


def test_node_argv_refuses_single_node_and_extra_args_rank(project: Project) -> None:
    single = load(project)
    with pytest.raises(RecipeError, match=r"topology\.nodes is 1"):
        render_node_argv(single, catalog_for_recipe(single), node_rank="0", dist_init_addr="h:1")
    clash = load(
        project,
        "parallelism: {tp: 16}\ntopology: {gpus: 8, nodes: 2}\n"
        "server: {extra_args: ['--node-rank', '0']}\n",
    )
    with pytest.raises(RecipeError, match="set per node by the exporter"):
        render_node_argv(clash, catalog_for_recipe(clash), node_rank="0", dist_init_addr="h:1")


@pytest.mark.parametrize(
    ("parallelism", "topology"),
    [
        ("{tp: 16}", "{gpus: 8, nodes: 2}"),
        ("{tp: 8, pp: 2}", "{gpus: 8, nodes: 2}"),
        ("{tp: 4, pp: 4}", "{gpus: 4, nodes: 4}"),
        ("{tp: 16, pp: 2}", "{gpus: 8, nodes: 4}"),
    ],
)
def test_nodes_split_accepts_filled_nodes(
    project: Project, parallelism: str, topology: str
) -> None:
    recipe = load(project, f"parallelism: {parallelism}\ntopology: {topology}\n")
    assert by_rule(check_recipe(resolved(recipe)), "nodes-split") == []
    assert by_rule(check_recipe(resolved(recipe)), "gpus-needed") == []


def test_nodes_split_flags_idle_gpus(project: Project) -> None:
    recipe = load(project, "parallelism: {tp: 8}\ntopology: {gpus: 8, nodes: 2}\n")
    [finding] = by_rule(check_recipe(resolved(recipe)), "nodes-split")
    assert finding.severity == "error"
    assert finding.path == "topology.gpus"
    assert "4 GPUs per node" in finding.message and "8 per node x 2 nodes = 16" in finding.message


def test_nodes_split_flags_pp_across_nodes(project: Project) -> None:
    recipe = load(project, "parallelism: {tp: 2, pp: 3}\ntopology: {gpus: 3, nodes: 2}\n")
    [finding] = by_rule(check_recipe(resolved(recipe)), "nodes-split")
    assert finding.path == "parallelism.pp"
    assert "one must divide the other" in finding.message


def test_nodes_split_leaves_too_few_gpus_to_gpus_needed(project: Project) -> None:
    recipe = load(project, "parallelism: {tp: 32}\ntopology: {gpus: 8, nodes: 2}\n")
    findings = check_recipe(resolved(recipe))
    assert by_rule(findings, "nodes-split") == []
    assert len(by_rule(findings, "gpus-needed")) == 1
