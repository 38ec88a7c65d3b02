"""Rules about parallelism (SGLang 0.5.x semantics); speculative decoding is in
`rules_speculative`."""

from __future__ import annotations

from repro.recipe.rulebase import Context, Issue, err, simulated, warn


def rule_gpus_needed(ctx: Context) -> list[Issue]:
    """GPUs needed = tp x pp, times dp when dp replicas don't share the TP group."""
    if simulated(ctx):
        return []
    par, topo = ctx.recipe.parallelism, ctx.recipe.topology
    needed, have = par.gpus_needed, topo.gpus * topo.nodes
    if have >= needed:
        return []
    how = f"tp {par.tp} x pp {par.pp}" + ("" if par.dp_attention else f" x dp {par.dp}")
    per_node = f" ({topo.gpus} per node x {topo.nodes} nodes)" if topo.nodes > 1 else ""
    return [
        err(
            ("topology", "gpus"),
            f"the deployment needs {needed} GPUs ({how}) but the topology has {have}{per_node}",
            "gpus-needed",
        )
    ]


def rule_ep_divides_tp(ctx: Context) -> list[Issue]:
    """--ep-size splits the TP group of the MoE layers (MoE TP = tp / ep): ep must divide tp."""
    par = ctx.recipe.parallelism
    if par.tp % par.ep == 0:
        return []
    return [
        err(
            ("parallelism", "ep"),
            f"ep {par.ep} must divide tp {par.tp} (SGLang's MoE TP size is tp / ep)",
            "ep-divides-tp",
        )
    ]


def rule_dp_attention(ctx: Context) -> list[Issue]:
    """DP attention splits the TP group: dp > 1 and dp divides tp."""
    par = ctx.recipe.parallelism
    if not par.dp_attention:
        return []
    if par.dp == 1:
        return [warn(("parallelism", "dp"), "dp_attention with dp 1 has no effect", "dp-attention")]
    if par.tp % par.dp:
        return [
            err(
                ("parallelism", "dp"),
                f"with dp_attention, dp {par.dp} (attention DP width) must divide tp {par.tp}",
                "dp-attention",
            )
        ]
    return []
