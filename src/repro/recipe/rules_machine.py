"""Rules about the machine (GPUs, memory, architectures, simulator), the bench, env, name."""

from __future__ import annotations

from repro.errors import suggestion
from repro.recipe.hardware import (
    HYBRID_GDN_BACKENDS,
    QWEN35_FAMILY,
    GpuModel,
    arch_major,
    gpu_model,
    weights_gb,
)
from repro.recipe.loader import from_lock_file
from repro.recipe.rulebase import Context, Issue, err, simulated, warn


def _gpu_memory(ctx: Context) -> float | None:
    topo = ctx.recipe.topology
    if topo.min_gpu_memory_gb is not None:
        return topo.min_gpu_memory_gb
    models = [m for m in map(gpu_model, topo.gpu_models) if m is not None]
    known = [m.memory_gb for m in models if m.memory_gb is not None]
    return min(known) if known else None


def rule_gpu_models_known(ctx: Context) -> list[Issue]:
    """GPU models are known (memory, architecture) and meet min_gpu_memory_gb."""
    if simulated(ctx):
        return []
    topo, out = ctx.recipe.topology, []
    for i, name in enumerate(topo.gpu_models):
        model = gpu_model(name)
        if model is None or model.memory_gb is None:
            if topo.min_gpu_memory_gb is None:
                what = "unknown GPU model" if model is None else "no one memory size for GPU"
                out.append(
                    warn(
                        ("topology", "gpu_models", i),
                        f"{what} '{name}': memory checks skipped; set topology.min_gpu_memory_gb",
                        "gpu-models",
                    )
                )
        elif topo.min_gpu_memory_gb is not None and model.memory_gb < topo.min_gpu_memory_gb:
            out.append(
                err(
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
    weights = weights_gb(r.model.repo, r.model.weights_gb)
    memory = _gpu_memory(ctx)
    if simulated(ctx) or weights is None or memory is None:
        return []
    fraction = r.server.mem_fraction_static or 0.9
    gpus = r.parallelism.replica_gpus
    capacity = gpus * memory * fraction
    if weights <= capacity:
        return []
    return [
        warn(
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
                err(
                    ("topology", "gpu_models", i),
                    f"{model.name} is sm_{model.arch.replace('.', '')}, which image "
                    f"'{ctx.image.name}' lacks (it has {', '.join(ctx.image.gpu_architectures)})",
                    "image-arch",
                )
            )
    return out


# FlashAttention 3 runs on sm_8x (without MLA) and sm_90 only: sglang 0.5.23
# srt/layers/attention/attention_registry.py `create_flashattention_v3_backend` asserts
# "FlashAttention v3 Backend requires SM>=80 and SM<=90" when the server starts.
FA3_ARCH_MAJORS = ("8", "9")
ATTENTION_BACKEND_DESTS = (
    "attention_backend",
    "prefill_attention_backend",
    "decode_attention_backend",
    "speculative_draft_attention_backend",
)


def rule_attention_arch(ctx: Context) -> list[Issue]:
    """An fa3 attention backend only starts on Ampere/Ada/Hopper GPUs."""
    out = []
    for dest in ATTENTION_BACKEND_DESTS:
        given = ctx.options.get(dest)
        if given is None or given.value != "fa3":
            continue
        models = [m for m in map(gpu_model, ctx.recipe.topology.gpu_models) if m is not None]
        other = [m for m in models if m.arch.split(".")[0] not in FA3_ARCH_MAJORS]
        if other:
            names = ", ".join(f"{m.name} (sm_{m.arch.replace('.', '')})" for m in other)
            out.append(
                err(
                    given.loc,
                    f"{given.spelling} fa3 needs sm_80-sm_90 GPUs, not {names}: SGLang asserts "
                    f"at startup (attention_registry.py); use {_instead_of_fa3(ctx, other)}",
                    "attention-arch",
                )
            )
    return out


def _instead_of_fa3(ctx: Context, models: list[GpuModel]) -> str:
    """The backends that start there: for the Qwen3.5 family (hybrid GDN) only those
    attention_registry.py allows on every one of these GPUs (no fa4 on sm_120)."""
    choices: tuple[str, ...] = ("flashinfer", "triton", "fa4")
    if QWEN35_FAMILY.search(ctx.recipe.model.repo):
        allowed = [HYBRID_GDN_BACKENDS.get(arch_major(m), ()) for m in models]
        choices = tuple(b for b in allowed[0] if all(b in a for a in allowed))
    if not choices:
        return "a backend those GPUs support"
    return ", ".join(choices[:-1]) + f" or {choices[-1]}" if len(choices) > 1 else choices[0]


def rule_simulated(ctx: Context) -> list[Issue]:
    """Simulator recipes: gpu_runtime none, gpus 0, a simulator section; GPU recipes: neither;
    recipes of a CPU image: no GPU and no simulator section."""
    r, out = ctx.recipe, []
    if ctx.image is None:
        return []
    if ctx.image.simulated or ctx.image.device == "cpu":
        what = "the simulator" if ctx.image.simulated else f"image '{ctx.image.name}' (CPU)"
        if r.topology.gpu_runtime != "none":
            out.append(
                err(
                    ("topology", "gpu_runtime"),
                    f"{what} reserves no GPU: set gpu_runtime: none",
                    "simulated",
                )
            )
        if r.topology.gpus != 0:
            out.append(err(("topology", "gpus"), f"{what} uses no GPU: set gpus: 0", "simulated"))
    if ctx.image.simulated:
        if r.simulator is None:
            out.append(
                err(
                    ("simulator",),
                    f"image '{ctx.image.name}' is simulated: add a simulator section "
                    "(profile, load_seconds, seed)",
                    "simulated",
                )
            )
    else:
        if r.topology.gpu_runtime == "none" and ctx.image.device != "cpu":
            out.append(
                err(
                    ("topology", "gpu_runtime"),
                    f"image '{ctx.image.name}' runs SGLang on GPUs: gpu_runtime must be nvidia",
                    "simulated",
                )
            )
        if r.simulator is not None:
            out.append(
                err(
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
            warn(
                ("bench", "concurrencies"),
                f"level {top} exceeds server.max_running_requests "
                f"{srv.max_running_requests}: requests queue",
                "bench",
            )
        )
    if bench.prompts_per_level < top:
        out.append(
            warn(
                ("bench", "prompts_per_level"),
                f"{bench.prompts_per_level} requests never reach concurrency {top}",
                "bench",
            )
        )
    if srv.context_length is not None and bench.input_len + bench.output_len > srv.context_length:
        out.append(
            err(
                ("bench", "input_len"),
                f"input_len + output_len = {bench.input_len + bench.output_len} exceeds "
                f"server.context_length {srv.context_length}",
                "bench",
            )
        )
    if r.speculative is not None and r.drafter is not None and bench.dataset == "random":
        out.append(
            warn(
                ("bench", "dataset"),
                "random-token prompts make a drafter look useless; use dataset: chat",
                "bench",
            )
        )
    return out


def rule_env_known(ctx: Context) -> list[Issue]:
    """Env knobs are spelled right and read by this image: a patch set's, or SGLang's own
    (the catalog lists what sglang/srt/environ.py declares, so an SGLANG_* variable of another
    era, e.g. the PCIe all-reduce of 0.5.22+ on an older build, is named)."""
    if ctx.catalog is None:
        return []
    provided = set(ctx.catalog.env)
    patched = set(ctx.image.provides.env) if ctx.image is not None else set()
    sglang_declares = bool(provided - patched)
    out = []
    for key in ctx.recipe.env:
        if key in provided:
            continue
        near = suggestion(key, provided, cutoff=0.8)
        if near:
            out.append(warn(("env", key), f"'{key}' is not read by this image{near}", "env-known"))
        elif key.startswith("SGLANG_DDTREE_"):
            out.append(
                warn(
                    ("env", key),
                    f"'{key}' has no effect: the image does not provide DDTREE",
                    "env-known",
                )
            )
        elif key.startswith("SGLANG_") and sglang_declares:
            out.append(
                warn(
                    ("env", key),
                    f"'{key}' is not read by {ctx.catalog_words}: no file of its source names "
                    "it (a variable of another SGLang version has no effect here)",
                    "env-known",
                )
            )
    return out


def rule_name_matches_file(ctx: Context) -> list[Issue]:
    """`name` is the file name, so that `repro ... NAME` finds it."""
    path = ctx.recipe.source_path
    if path is None or from_lock_file(ctx.recipe) or path.stem == ctx.recipe.name:
        return []
    return [
        warn(
            ("name",), f"name '{ctx.recipe.name}' differs from the file name '{path.stem}'", "name"
        )
    ]
