"""Cross-field rules for SGLang 0.5.x, each a small named function, and `check_recipe`.

A rule takes a `Context` (the recipe, its image spec and catalog when they could be loaded)
and returns `Issue`s; `check_recipe` turns them into `Finding`s that name the file (the one
in the `extends` chain that set the field) and the field path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from repro.recipe.catalog import Catalog
from repro.recipe.context import catalog_for_recipe, image_for_recipe, images_dir_for
from repro.recipe.errors import Finding, RecipeError, Severity, suggestion
from repro.recipe.hardware import MODEL_WEIGHTS_GB, gpu_model
from repro.recipe.loader import locate
from repro.recipe.render import Issue, analyze
from repro.recipe.schema import Recipe

if TYPE_CHECKING:
    from repro.imagespec import ImageSpec

DFLASH_FAMILY = ("DFLASH", "DDTREE")  # DDTREE reuses the DFlash drafter and worker


@dataclass
class Context:
    recipe: Recipe
    image: ImageSpec | None = None
    catalog: Catalog | None = None


Rule = Callable[[Context], list[Issue]]


def _err(loc: tuple[str | int, ...], message: str, rule: str) -> Issue:
    return Issue(loc, "error", message, rule)


def _warn(loc: tuple[str | int, ...], message: str, rule: str) -> Issue:
    return Issue(loc, "warning", message, rule)


def _simulated(ctx: Context) -> bool:
    return bool(ctx.image and ctx.image.simulated) or ctx.recipe.topology.gpu_runtime == "none"


def _algorithm(ctx: Context) -> str | None:
    spec = ctx.recipe.speculative
    return spec.algorithm if spec else None


# --- parallelism ----------------------------------------------------------------------------
def rule_gpus_needed(ctx: Context) -> list[Issue]:
    """GPUs needed = tp x pp, times dp when dp replicas don't share the TP group."""
    if _simulated(ctx):
        return []
    par, topo = ctx.recipe.parallelism, ctx.recipe.topology
    needed, have = par.gpus_needed, topo.gpus * topo.nodes
    if have >= needed:
        return []
    how = f"tp {par.tp} x pp {par.pp}" + ("" if par.dp_attention else f" x dp {par.dp}")
    per_node = f" ({topo.gpus} per node x {topo.nodes} nodes)" if topo.nodes > 1 else ""
    return [
        _err(
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
        _err(
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
        return [
            _warn(("parallelism", "dp"), "dp_attention with dp 1 has no effect", "dp-attention")
        ]
    if par.tp % par.dp:
        return [
            _err(
                ("parallelism", "dp"),
                f"with dp_attention, dp {par.dp} (attention DP width) must divide tp {par.tp}",
                "dp-attention",
            )
        ]
    return []


# --- speculative decoding -------------------------------------------------------------------
def rule_dflash(ctx: Context) -> list[Issue]:
    """DFLASH (and DDTREE, built on it): drafter, pp 1, no DP attention, agreeing block size."""
    algo = _algorithm(ctx)
    if algo not in DFLASH_FAMILY:
        return []
    r, out = ctx.recipe, []
    spec = r.speculative
    assert spec is not None
    if r.drafter is None:
        out.append(_err(("drafter",), f"{algo} needs a drafter (a DFlash draft model)", "dflash"))
    if r.parallelism.pp != 1:
        out.append(
            _err(("parallelism", "pp"), f"{algo} needs pp 1, got {r.parallelism.pp}", "dflash")
        )
    if r.parallelism.dp_attention:
        out.append(
            _err(
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
            _err(
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
                _warn(
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
        _err(
            ("speculative", "ddtree_budget"),
            "DDTREE needs ddtree_budget (budget + 1 tokens are verified per step; "
            "15 is a good start)",
            "ddtree",
        )
    ]


def _images_providing(ctx: Context, algorithm: str) -> list[str]:
    from repro.imagespec import list_image_specs, load_image_spec

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
    algo = _algorithm(ctx)
    if algo is None or ctx.catalog is None or ctx.catalog.has_algorithm(algo):
        return []
    image = ctx.image.name if ctx.image else ctx.recipe.image
    providers = _images_providing(ctx, algo)
    where = f"; images whose patch set provides it: {', '.join(providers)}" if providers else ""
    near = suggestion(algo, ctx.catalog.speculative_algorithms)
    return [
        _err(
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
            _warn(
                ("drafter",), "a drafter without speculative settings is not used", "drafter-used"
            )
        )
    if r.accept is not None and r.speculative is None:
        out.append(
            _warn(
                ("accept",), "acceptance is measured only with speculative decoding", "drafter-used"
            )
        )
    return out


# --- machine --------------------------------------------------------------------------------
def _gpu_memory(ctx: Context) -> float | None:
    topo = ctx.recipe.topology
    if topo.min_gpu_memory_gb is not None:
        return topo.min_gpu_memory_gb
    known = [m.memory_gb for m in map(gpu_model, topo.gpu_models) if m is not None]
    return min(known) if known else None


def rule_gpu_models_known(ctx: Context) -> list[Issue]:
    """GPU models are known (memory, architecture) and meet min_gpu_memory_gb."""
    if _simulated(ctx):
        return []
    topo, out = ctx.recipe.topology, []
    for i, name in enumerate(topo.gpu_models):
        model = gpu_model(name)
        if model is None:
            if topo.min_gpu_memory_gb is None:
                out.append(
                    _warn(
                        ("topology", "gpu_models", i),
                        f"unknown GPU model '{name}': memory checks skipped; set "
                        "topology.min_gpu_memory_gb",
                        "gpu-models",
                    )
                )
        elif topo.min_gpu_memory_gb is not None and model.memory_gb < topo.min_gpu_memory_gb:
            out.append(
                _err(
                    ("topology", "gpu_models", i),
                    f"{model.name} has {model.memory_gb:g} GB, below min_gpu_memory_gb "
                    f"{topo.min_gpu_memory_gb:g}",
                    "gpu-models",
                )
            )
    return out


def rule_weights_fit(ctx: Context) -> list[Issue]:
    """The weights fit in one replica's GPU memory (tp x pp GPUs x mem_fraction_static)."""
    r = ctx.recipe
    weights = r.model.weights_gb or MODEL_WEIGHTS_GB.get(r.model.repo)
    memory = _gpu_memory(ctx)
    if _simulated(ctx) or weights is None or memory is None:
        return []
    fraction = r.server.mem_fraction_static or 0.9
    gpus = r.parallelism.replica_gpus
    capacity = gpus * memory * fraction
    if weights <= capacity:
        return []
    return [
        _warn(
            ("parallelism",),
            f"about {weights:g} GB of weights do not fit one replica: {gpus} GPUs x "
            f"{memory:g} GB x {fraction:g} = {capacity:.0f} GB",
            "weights-fit",
        )
    ]


def rule_image_arch(ctx: Context) -> list[Issue]:
    """The image carries kernels for every GPU model the topology names."""
    if ctx.image is None or ctx.image.simulated:
        return []
    out = []
    for i, name in enumerate(ctx.recipe.topology.gpu_models):
        model = gpu_model(name)
        if model is not None and model.arch not in ctx.image.gpu_architectures:
            out.append(
                _err(
                    ("topology", "gpu_models", i),
                    f"{model.name} is sm_{model.arch.replace('.', '')}, which image "
                    f"'{ctx.image.name}' lacks (it has {', '.join(ctx.image.gpu_architectures)})",
                    "image-arch",
                )
            )
    return out


def rule_simulated(ctx: Context) -> list[Issue]:
    """Simulator recipes: gpu_runtime none, gpus 0, a simulator section; GPU recipes: neither."""
    r, out = ctx.recipe, []
    if ctx.image is None:
        return []
    if ctx.image.simulated:
        if r.topology.gpu_runtime != "none":
            out.append(
                _err(
                    ("topology", "gpu_runtime"),
                    "the simulator reserves no GPU: set gpu_runtime: none",
                    "simulated",
                )
            )
        if r.topology.gpus != 0:
            out.append(
                _err(("topology", "gpus"), "the simulator uses no GPU: set gpus: 0", "simulated")
            )
        if r.simulator is None:
            out.append(
                _err(
                    ("simulator",),
                    f"image '{ctx.image.name}' is simulated: add a simulator section "
                    "(profile, load_seconds, seed)",
                    "simulated",
                )
            )
    else:
        if r.topology.gpu_runtime == "none":
            out.append(
                _err(
                    ("topology", "gpu_runtime"),
                    f"image '{ctx.image.name}' runs SGLang on GPUs: gpu_runtime must be nvidia",
                    "simulated",
                )
            )
        if r.simulator is not None:
            out.append(
                _err(
                    ("simulator",),
                    f"image '{ctx.image.name}' is not simulated: remove the simulator section",
                    "simulated",
                )
            )
    return out


# --- benchmark, env, naming -----------------------------------------------------------------
def rule_bench(ctx: Context) -> list[Issue]:
    """The sweep can reach its levels and fits the context; drafters need chat prompts."""
    r, out = ctx.recipe, []
    bench, srv = r.bench, r.server
    top = max(bench.concurrencies)
    if srv.max_running_requests is not None and top > srv.max_running_requests:
        out.append(
            _warn(
                ("bench", "concurrencies"),
                f"level {top} exceeds server.max_running_requests "
                f"{srv.max_running_requests}: requests queue",
                "bench",
            )
        )
    if bench.prompts_per_level < top:
        out.append(
            _warn(
                ("bench", "prompts_per_level"),
                f"{bench.prompts_per_level} requests never reach concurrency {top}",
                "bench",
            )
        )
    if srv.context_length is not None and bench.input_len + bench.output_len > srv.context_length:
        out.append(
            _err(
                ("bench", "input_len"),
                f"input_len + output_len = {bench.input_len + bench.output_len} exceeds "
                f"server.context_length {srv.context_length}",
                "bench",
            )
        )
    if r.speculative is not None and r.drafter is not None and bench.dataset == "random":
        out.append(
            _warn(
                ("bench", "dataset"),
                "random-token prompts make a drafter look useless; use dataset: chat",
                "bench",
            )
        )
    return out


def rule_env_known(ctx: Context) -> list[Issue]:
    """Env knobs a patch set reads are spelled right and provided by this image."""
    if ctx.catalog is None:
        return []
    provided = set(ctx.catalog.env)
    out = []
    for key in ctx.recipe.env:
        if key in provided:
            continue
        near = suggestion(key, provided, cutoff=0.8)
        if near:
            out.append(_warn(("env", key), f"'{key}' is not read by this image{near}", "env-known"))
        elif key.startswith("SGLANG_DDTREE_"):
            out.append(
                _warn(
                    ("env", key),
                    f"'{key}' has no effect: the image does not provide DDTREE",
                    "env-known",
                )
            )
    return out


def rule_name_matches_file(ctx: Context) -> list[Issue]:
    """`name` is the file name, so that `repro ... NAME` finds it."""
    path = ctx.recipe.source_path
    if path is None or ctx.recipe.lock_data is not None or path.stem == ctx.recipe.name:
        return []
    return [
        _warn(
            ("name",), f"name '{ctx.recipe.name}' differs from the file name '{path.stem}'", "name"
        )
    ]


RULES: list[Rule] = [
    rule_gpus_needed,
    rule_ep_divides_tp,
    rule_dp_attention,
    rule_dflash,
    rule_ddtree,
    rule_algorithm_in_image,
    rule_drafter_used,
    rule_gpu_models_known,
    rule_weights_fit,
    rule_image_arch,
    rule_simulated,
    rule_bench,
    rule_env_known,
    rule_name_matches_file,
]


def _finding(recipe: Recipe, issue: Issue) -> Finding:
    shown, path = locate(recipe, issue.loc)
    severity: Severity = "error" if issue.severity == "error" else "warning"
    return Finding(severity, shown, path, issue.message, issue.rule)


def check_recipe(
    recipe: Recipe, catalog: Catalog | None = None, image: ImageSpec | None = None
) -> list[Finding]:
    """Every error and warning of `recipe`, each naming file and field path."""
    issues: list[Issue] = []
    if image is None:
        from repro.imagespec import ImageSpecNotFound

        try:
            image = image_for_recipe(recipe, wrap=False)
        except ImageSpecNotFound as err:
            issues.append(_err(("image",), err.message, "image"))
        except RecipeError as err:
            issues.append(
                _err(("image",), "invalid image spec: " + "; ".join(err.problems), "image")
            )
    if catalog is None and image is not None:
        try:
            catalog = catalog_for_recipe(recipe, image)
        except RecipeError as err:
            issues.append(_err(("image",), err.message, "catalog"))
    ctx = Context(recipe, image, catalog)
    for rule in RULES:
        issues.extend(rule(ctx))
    if catalog is not None:
        issues.extend(analyze(recipe, catalog).issues)
    findings = list(dict.fromkeys(_finding(recipe, i) for i in issues))
    return sorted(findings, key=lambda f: f.severity != "error")
