"""Rules about parallelism and speculative decoding (SGLang 0.5.x semantics)."""

from __future__ import annotations

from repro.errors import RecipeError, suggestion
from repro.recipe.context import images_dir_for
from repro.recipe.images import list_image_specs, load_image_spec
from repro.recipe.rulebase import DFLASH_FAMILY, Context, Issue, algorithm, err, simulated, warn


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


# --- speculative decoding -------------------------------------------------------------------
def rule_dflash(ctx: Context) -> list[Issue]:
    """DFLASH (and DDTREE, built on it): drafter, pp 1, no DP attention, agreeing block size."""
    algo = algorithm(ctx)
    if algo not in DFLASH_FAMILY:
        return []
    r, out = ctx.recipe, []
    spec = r.speculative
    assert spec is not None
    if r.drafter is None:
        out.append(err(("drafter",), f"{algo} needs a drafter (a DFlash draft model)", "dflash"))
    if r.parallelism.pp != 1:
        out.append(
            err(("parallelism", "pp"), f"{algo} needs pp 1, got {r.parallelism.pp}", "dflash")
        )
    if r.parallelism.dp_attention:
        out.append(
            err(
                ("parallelism", "dp_attention"),
                f"{algo} does not combine with DP attention",
                "dflash",
            )
        )
    if (
        spec.block_size is not None
        and spec.num_draft_tokens is not None
        and spec.block_size != spec.num_draft_tokens
        and algo == "DFLASH"
    ):
        out.append(
            err(
                ("speculative", "block_size"),
                f"block_size {spec.block_size} and num_draft_tokens {spec.num_draft_tokens} "
                "must agree (--speculative-dflash-block-size is an alias of "
                "--speculative-num-draft-tokens)",
                "dflash",
            )
        )
    for key in ("num_steps", "eagle_topk"):
        value = getattr(spec, key)
        if value not in (None, 1):
            out.append(
                warn(
                    ("speculative", key), f"{algo} forces {key} to 1; {value} is ignored", "dflash"
                )
            )
    return out


def rule_ddtree(ctx: Context) -> list[Issue]:
    """DDTREE needs a tree budget (and, see rule_algorithm_in_image, an image providing it)."""
    spec = ctx.recipe.speculative
    if spec is None or spec.algorithm != "DDTREE" or spec.ddtree_budget is not None:
        return []
    return [
        err(
            ("speculative", "ddtree_budget"),
            "DDTREE needs ddtree_budget (budget + 1 tokens are verified per step; "
            "15 is a good start)",
            "ddtree",
        )
    ]


def _images_providing(ctx: Context, algorithm: str) -> list[str]:

    folder = images_dir_for(ctx.recipe)
    names = []
    for name in list_image_specs(folder):
        try:
            spec = load_image_spec(name, folder)
        except RecipeError:
            continue
        if algorithm in spec.provides.speculative_algorithms:
            names.append(name)
    return names


def rule_algorithm_in_image(ctx: Context) -> list[Issue]:
    """The speculative algorithm is registered in the image (builtin or from its patch set)."""
    algo = algorithm(ctx)
    if algo is None or ctx.catalog is None or ctx.catalog.has_algorithm(algo):
        return []
    image = ctx.image.name if ctx.image else ctx.recipe.image
    providers = _images_providing(ctx, algo)
    where = f"; images whose patch set provides it: {', '.join(providers)}" if providers else ""
    near = suggestion(algo, ctx.catalog.speculative_algorithms)
    return [
        err(
            ("speculative", "algorithm"),
            f"image '{image}' (SGLang {ctx.catalog.sglang_version}) does not provide {algo}"
            f"{near}{where}",
            "algorithm-in-image",
        )
    ]


def rule_drafter_used(ctx: Context) -> list[Issue]:
    """A drafter without speculative decoding is never loaded; acceptance needs one."""
    r, out = ctx.recipe, []
    if r.drafter is not None and r.speculative is None:
        out.append(
            warn(("drafter",), "a drafter without speculative settings is not used", "drafter-used")
        )
    if r.accept is not None and r.speculative is None:
        out.append(
            warn(
                ("accept",), "acceptance is measured only with speculative decoding", "drafter-used"
            )
        )
    return out
