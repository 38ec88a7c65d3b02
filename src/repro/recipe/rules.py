"""Cross-field rules for SGLang 0.5.x, each a small named function, and `check_recipe`.

A rule takes a `Context` (the recipe, its image spec and catalog when they could be loaded)
and returns `Issue`s; `check_recipe` turns them into `Finding`s that name the file (the one
in the `extends` chain that set the field) and the field path. The rules live in
`rules_model` (parallelism), `rules_speculative` (speculative decoding, patch-set
constraints) and `rules_machine` (GPUs, memory, architectures, simulator, bench, env, name).
"""

from __future__ import annotations

from repro.recipe.findings import Finding, Severity
from repro.recipe.images import ImageSpecNotFound
from repro.recipe.loader import locate
from repro.recipe.render import Issue, analyze
from repro.recipe.rulebase import Context, Rule, err, simulated
from repro.recipe.rules_forced import rule_forced_acceptance
from repro.recipe.rules_machine import (
    rule_attention_arch,
    rule_bench,
    rule_env_known,
    rule_gpu_models_known,
    rule_image_arch,
    rule_name_matches_file,
    rule_simulated,
    rule_weights_fit,
)
from repro.recipe.rules_model import (
    rule_dp_attention,
    rule_drafter_fits_model,
    rule_ep_divides_tp,
    rule_gpus_needed,
    rule_tp_divides,
)
from repro.recipe.rules_speculative import (
    rule_algorithm_in_image,
    rule_ddtree,
    rule_ddtree_page_size,
    rule_ddtree_spine,
    rule_dflash,
    rule_drafter_architecture,
    rule_drafter_block_size,
    rule_drafter_used,
    rule_patch_constraints,
    rule_running_requests,
)
from repro.schema.lock import Lock, Locked
from repro.schema.recipe import Recipe

__all__ = [
    "RULES",
    "Context",
    "Finding",
    "check_recipe",
    "rule_algorithm_in_image",
    "rule_attention_arch",
    "rule_bench",
    "rule_ddtree",
    "rule_ddtree_page_size",
    "rule_ddtree_spine",
    "rule_dflash",
    "rule_dp_attention",
    "rule_drafter_architecture",
    "rule_drafter_block_size",
    "rule_drafter_fits_model",
    "rule_drafter_used",
    "rule_env_known",
    "rule_ep_divides_tp",
    "rule_gpu_models_known",
    "rule_gpus_needed",
    "rule_image_arch",
    "rule_name_matches_file",
    "rule_nodes_split",
    "rule_patch_constraints",
    "rule_running_requests",
    "rule_simulated",
    "rule_tp_divides",
    "rule_weights_fit",
]


def rule_nodes_split(ctx: Context) -> list[Issue]:
    """Multi-node: every node runs (tp x pp) / nodes ranks, one per GPU, so tp x pp must equal
    GPUs per node x nodes, and pp and nodes must divide one into the other (mirrors
    sglang/srt/entrypoints/engine.py: nnodes_per_tp_group = max(nnodes // pp_size, 1),
    tp_size_per_node = tp_size // nnodes_per_tp_group, pp_size_per_node =
    max(pp_size // nnodes, 1))."""
    par, topo = ctx.recipe.parallelism, ctx.recipe.topology
    if topo.nodes == 1 or simulated(ctx):
        return []
    nodes, replica, have = topo.nodes, par.gpus_needed, topo.gpus * topo.nodes
    how = f"tp {par.tp} x pp {par.pp}" + (
        "" if par.dp_attention or par.dp == 1 else f" x dp {par.dp}"
    )
    if par.pp % nodes and nodes % par.pp:
        return [
            err(
                ("parallelism", "pp"),
                f"pp {par.pp} and {nodes} nodes: one must divide the other (SGLang places "
                "whole pipeline stages, or whole TP groups, per node)",
                "nodes-split",
            )
        ]
    if replica > have:
        return []  # rule_gpus_needed reports it
    if replica != have:
        per_node = f"{replica // nodes}" if replica % nodes == 0 else f"{replica}/{nodes}"
        return [
            err(
                ("topology", "gpus"),
                f"{how} = {replica} ranks over {nodes} nodes is {per_node} GPUs per node, but "
                f"topology.gpus is {topo.gpus} per node x {nodes} nodes = {have}; SGLang starts "
                "the same number of ranks on every node, one per GPU",
                "nodes-split",
            )
        ]
    return []


RULES: list[Rule] = [
    rule_gpus_needed,
    rule_nodes_split,
    rule_tp_divides,
    rule_ep_divides_tp,
    rule_dp_attention,
    rule_drafter_fits_model,
    rule_dflash,
    rule_ddtree,
    rule_forced_acceptance,
    rule_ddtree_spine,
    rule_ddtree_page_size,
    rule_drafter_architecture,
    rule_drafter_block_size,
    rule_patch_constraints,
    rule_algorithm_in_image,
    rule_running_requests,
    rule_drafter_used,
    rule_gpu_models_known,
    rule_weights_fit,
    rule_image_arch,
    rule_attention_arch,
    rule_simulated,
    rule_bench,
    rule_env_known,
    rule_name_matches_file,
]


def _finding(recipe: Recipe, issue: Issue) -> Finding:
    shown, path = locate(recipe, issue.loc)
    severity: Severity = "error" if issue.severity == "error" else "warning"
    return Finding(severity, shown, path, issue.message, issue.rule)


def check_recipe(locked: Locked) -> list[Finding]:
    """Every error and warning of the recipe, each naming file and field path, against the
    image spec and catalog `locked` was resolved with (its lock's, when it has one)."""
    recipe, lock, image, catalog = locked.recipe, locked.lock, locked.image_spec, locked.catalog
    issues: list[Issue] = []
    if image is None or catalog is None:
        issues.append(_image_issue(locked.image_error, image is None))
    image_catalog = lock is not None and lock.catalog is not None
    block_size = lock.drafter_block_size if lock is not None else None
    architectures = (lock.drafter_architectures if lock is not None else None) or []
    ctx = Context(recipe, image, catalog, image_catalog, block_size)
    ctx.drafter_architectures = architectures
    _facts(ctx, lock)
    for rule in RULES:
        issues.extend(rule(ctx))
    if catalog is not None:
        issues.extend(analyze(recipe, catalog).issues)
    findings = list(dict.fromkeys(_finding(recipe, i) for i in issues))
    return sorted(findings, key=lambda f: f.severity != "error")


def _facts(ctx: Context, lock: Lock | None) -> None:
    """The model's and drafter's facts: config.json at the locked commits, else what the
    recipe declares (a drafter's only from the file that names that drafter)."""
    if lock is not None and (lock.model_facts or lock.drafter_facts):
        ctx.model_facts, ctx.drafter_facts = lock.model_facts, lock.drafter_facts
        ctx.facts_source = "config.json at the locked commits"
        return
    recipe = ctx.recipe
    ctx.model_facts = recipe.model.facts
    drafter = recipe.drafter
    if drafter is not None and drafter.facts is not None:
        repo_file = locate(recipe, ("drafter", "repo"))[0]
        facts_file = locate(recipe, ("drafter", "facts"))[0]
        ctx.drafter_facts = drafter.facts if repo_file == facts_file else None
        if repo_file != facts_file:
            ctx.drafter_facts_elsewhere = (repo_file, facts_file)
    shown = locate(recipe, ("model", "facts"))[0]
    ctx.facts_source = f"as declared in {shown}"


def _image_issue(error: Exception | None, spec_missing: bool) -> Issue:
    """Why the image spec or its catalog did not load, as a finding on the `image` field."""
    if error is None:
        return err(("image",), "no image spec was resolved for this recipe", "image")
    cause = error.__cause__  # the spec file that is not there (`image_for_recipe`)
    if isinstance(cause, ImageSpecNotFound):
        return err(("image",), cause.message, "image")
    problems = getattr(error, "problems", None) or [getattr(error, "message", str(error))]
    if spec_missing:
        return err(("image",), f"invalid image spec: {'; '.join(problems)}", "image")
    return err(("image",), getattr(error, "message", str(error)), "catalog")
