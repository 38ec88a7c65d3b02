"""Rules about parallelism (SGLang 0.5.x semantics); speculative decoding is in
`rules_speculative`."""

from __future__ import annotations

from repro.recipe.rulebase import Context, Issue, edited, err, simulated, warn


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
    sizes = [("parallelism", key) for key in ("tp", "pp", "dp")]
    return [
        err(
            edited(ctx, ("topology", "gpus"), *sizes),
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


def rule_tp_divides(ctx: Context) -> list[Issue]:
    """TP shards the attention heads and fills the GPUs: tp must divide the model's heads
    (SGLang asserts num_attention_heads % tp_size == 0 when it builds the attention layers)
    and the deployment's ranks must divide the GPUs (a TP3 on 8 GPUs leaves two idle)."""
    par, topo = ctx.recipe.parallelism, ctx.recipe.topology
    issues = []
    heads = ctx.model_facts.num_attention_heads if ctx.model_facts else None
    if heads is not None and heads % par.tp:
        issues.append(
            err(
                ("parallelism", "tp"),
                f"tp {par.tp} does not divide the model's {heads} attention heads "
                f"({ctx.facts_source}); choose a tp that divides {heads}",
                "tp-divides-heads",
            )
        )
    have, needed = topo.gpus * topo.nodes, par.gpus_needed
    if not simulated(ctx) and needed <= have and have % needed:
        issues.append(
            err(
                edited(ctx, ("parallelism", "tp"), ("topology", "gpus"), ("parallelism", "pp")),
                f"the deployment's {needed} ranks (tp {par.tp} x pp {par.pp}) do not divide "
                f"the topology's {have} GPUs; use sizes whose product divides {have}",
                "tp-divides-gpus",
            )
        )
    return issues


def _fit_unchecked(ctx: Context, repo_file: str, facts_file: str) -> Issue:
    """A drafter swapped in without its facts: the facts inherited belong to the one it
    replaced, so nothing says whether it fits until a lock reads its config.json."""
    assert ctx.recipe.drafter is not None
    repo = ctx.recipe.drafter.repo
    return warn(
        ("drafter", "repo"),
        f"drafter {repo}: its fit to model {ctx.recipe.model.repo} is unchecked: {repo_file} "
        f"names it without `facts`, and the drafter.facts of {facts_file} are the drafter's "
        "it replaces; declare its vocab_size and hidden_size beside its repo, or run "
        "`repro lock` (which reads its config.json)",
        "drafter-fit-unchecked",
    )


def rule_drafter_fits_model(ctx: Context) -> list[Issue]:
    """A drafter reads the target's hidden states and shares its embedding and LM head: the
    vocabulary and hidden size must be the model's, and a drafter trained for another
    architecture is for another model."""
    model, drafter = ctx.model_facts, ctx.drafter_facts
    if ctx.recipe.drafter is not None and ctx.drafter_facts_elsewhere and drafter is None:
        return [_fit_unchecked(ctx, *ctx.drafter_facts_elsewhere)]
    if ctx.recipe.drafter is None or model is None or drafter is None:
        return []
    pairs = (
        ("architecture", drafter.target_architecture, model.architecture),
        ("vocab_size", drafter.vocab_size, model.vocab_size),
        ("hidden_size", drafter.hidden_size, model.hidden_size),
    )
    differ = [f"{name} {d} vs {m}" for name, d, m in pairs if d and m and d != m]
    if not differ:
        return []
    repo, target = ctx.recipe.drafter.repo, ctx.recipe.model.repo
    return [
        err(
            ("drafter", "repo"),
            f"drafter {repo} does not fit model {target}: {', '.join(differ)} "
            f"(drafter vs model, {ctx.facts_source}); pin a drafter trained for {target}",
            "drafter-fits-model",
        )
    ]
