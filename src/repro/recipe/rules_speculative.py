"""Rules about speculative decoding: DFLASH and DDTREE, the algorithm registry, what a patch
set's algorithms require of other options, and SGLang's cap on running requests.

Each rule cites where SGLang (the 0.5.23 wheel, or the DDTree pull request) does what it
checks. Rules that depend on the SGLang version read the catalog in force: the shipped
stand-in before `repro lock`, the image's own after.
"""

from __future__ import annotations

from repro.errors import RecipeError, suggestion
from repro.recipe.argv_check import first_release_with_architecture
from repro.recipe.hardware import DEEPSEEK_FAMILY, QWEN35_FAMILY, GpuModel, arch_major, gpu_model
from repro.recipe.images import images_dir_for, list_image_specs, load_image_spec
from repro.recipe.rulebase import (
    ALGORITHM_ALIASES,
    DFLASH_FAMILY,
    Context,
    Issue,
    algorithm,
    err,
    warn,
)
from repro.schema.image import OptionConstraint

DDTREE_PR = "sgl-project/sglang#29907"

# sglang 0.5.23 srt/arg_groups/speculative_hook.py: `_handle_dflash`, `_handle_eagle_family`,
# `_handle_dspark`, `_handle_frozen_kv_mtp` and `_handle_ngram` reset an unset
# --max-running-requests to 48 ("Max running requests is reset to 48 for speculative
# decoding"); `_handle_uno` does not.
SPECULATIVE_RUNNING_DEFAULT = 48
UNCAPPED_ALGORITHMS = ("UNO",)

# sglang 0.5.23 srt/arg_groups/choices.py DRAFT_ATTENTION_BACKEND_CHOICES: the draft attention
# backends DFLASH supports; `_resolve_dflash_draft_attention_backend` (speculative_hook.py)
# replaces any other with a fallback (flashinfer on CUDA) and only logs a warning.
DFLASH_DRAFT_BACKENDS = ("flashinfer", "fa3", "fa4", "triton", "ascend", "trtllm_mha", "intel_xpu")


def draft_tokens(ctx: Context) -> int | None:
    """Draft tokens per step: what the recipe sets, else the drafter's block size the lock read
    from its config.json (SGLang then takes the drafter's own)."""
    spec = ctx.recipe.speculative
    if spec is None:
        return None
    return spec.num_draft_tokens or spec.block_size or ctx.drafter_block_size


def rule_drafter_block_size(ctx: Context) -> list[Issue]:
    """The rendered --speculative-num-draft-tokens (and its alias --speculative-dflash-block-size)
    must be the block size the locked drafter was trained with, as z-lab's DFlash cards launch
    it (e.g. Qwen3.6-27B-DFlash: block_size 16, --speculative-num-draft-tokens 16)."""
    spec, locked = ctx.recipe.speculative, ctx.drafter_block_size
    if spec is None or locked is None or algorithm(ctx) not in DFLASH_FAMILY:
        return []
    drafter = ctx.recipe.drafter.repo if ctx.recipe.drafter else "the drafter"
    out = []
    for key in ("num_draft_tokens", "block_size"):
        value = getattr(spec, key)
        if value is not None and value != locked:
            out.append(
                err(
                    ("speculative", key),
                    f"{key} {value} disagrees with the locked drafter {drafter}, whose "
                    f"config.json has block_size {locked}: set {key} to {locked} (or leave it "
                    "unset)",
                    "drafter-block-size",
                )
            )
    return out


def rule_drafter_architecture(ctx: Context) -> list[Issue]:
    """The locked drafter's model class (config.json `architectures`) is one the image's SGLang
    registers (an EntryClass of sglang/srt/models): z-lab's newer DFlash2DraftModel drafters
    load only from 0.5.20 (srt/models/dflash.py), so an older image fails at load time."""
    archs, catalog = ctx.drafter_architectures, ctx.catalog
    if not archs or catalog is None or not catalog.model_architectures:
        return []
    missing = [a for a in archs if a not in catalog.model_architectures]
    if not missing:
        return []
    first = first_release_with_architecture(missing[0])
    since = (
        f"; SGLang registers it from {first}: use an image of that release or later"
        if first
        else "; no SGLang release repro ships registers it"
    )
    drafter = ctx.recipe.drafter.repo if ctx.recipe.drafter else "the drafter"
    return [
        err(
            ("drafter",),
            f"the locked drafter {drafter} is a {', '.join(missing)}, which {ctx.catalog_words} "
            f"cannot load (no srt/models EntryClass of that name){since}",
            "drafter-architecture",
        )
    ]


def _draft_backend(ctx: Context, algo: str) -> list[Issue]:
    """A draft attention backend DFLASH does not support is replaced, with only a log line."""
    spec = ctx.recipe.speculative
    assert spec is not None
    backend = spec.draft_attention_backend
    loc: tuple[str | int, ...] = ("speculative", "draft_attention_backend")
    what = "draft_attention_backend"
    if backend is None:  # the draft worker takes the target's (prefill) attention backend
        target = ctx.options.get("prefill_attention_backend") or ctx.options.get(
            "attention_backend"
        )
        if target is None:
            return _draft_backend_chosen_by_sglang(ctx, algo, loc)
        backend, loc, what = str(target.value), target.loc, f"the target's {target.spelling}"
    if backend in DFLASH_DRAFT_BACKENDS:
        return []
    return [
        warn(
            loc,
            f"{algo}'s draft worker does not support {what} '{backend}' and silently falls back "
            f"(to flashinfer on CUDA); SGLang 0.5.23 supports {', '.join(DFLASH_DRAFT_BACKENDS)} "
            "(speculative_hook.py)",
            "dflash",
        )
    ]


def _sm100(ctx: Context) -> list[GpuModel]:
    found = [gpu_model(name) for name in ctx.recipe.topology.gpu_models]
    return [m for m in found if m is not None and arch_major(m) == "10"]


def _draft_backend_chosen_by_sglang(
    ctx: Context, algo: str, loc: tuple[str | int, ...]
) -> list[Issue]:
    """No backend set anywhere: on sm_100 SGLang gives a DeepSeek-family target (Kimi K2.x)
    trtllm_mla, which the draft worker inherits and replaces with flashinfer, logged only."""
    sm100 = _sm100(ctx)
    if not sm100 or not DEEPSEEK_FAMILY.search(ctx.recipe.model.repo):
        return []
    names = ", ".join(m.name for m in sm100)
    return [
        warn(
            loc,
            f"on {names} SGLang sets the target's attention backend to trtllm_mla for "
            f"{ctx.recipe.model.repo} (srt/arg_groups/model_overrides/deepseek_v2.py), which "
            f"{algo}'s draft worker does not support: it falls back to flashinfer and only logs "
            "it (speculative_hook.py); set speculative.draft_attention_backend (z-lab's "
            "Kimi-K2.5-DFlash card: fa4)",
            "dflash",
        )
    ]


def rule_ddtree_page_size(ctx: Context) -> list[Issue]:
    """DDTREE requires page_size 1 (DDTREE_PR); without an attention backend, SGLang gives the
    Qwen3.5 family trtllm_mha and page_size 64 on sm_100 (model_overrides/qwen3_5.py, for
    speculative decoding with topk 1), so the server refuses to start though no page size is
    set."""
    if algorithm(ctx) != "DDTREE" or not QWEN35_FAMILY.search(ctx.recipe.model.repo):
        return []
    sm100 = _sm100(ctx)
    if not sm100 or "attention_backend" in ctx.options or "page_size" in ctx.options:
        return []
    names = ", ".join(m.name for m in sm100)
    return [
        err(
            ("server", "extra_args"),
            f"on {names} SGLang sets page_size 64 (attention backend trtllm_mha) for "
            f"{ctx.recipe.model.repo} when no attention backend is set "
            "(srt/arg_groups/model_overrides/qwen3_5.py), and DDTREE requires page_size 1 "
            f"({DDTREE_PR}, speculative_hook.py): set --attention-backend triton (page_size 1) "
            "in server.extra_args",
            "ddtree-page-size",
        )
    ]


def rule_dflash(ctx: Context) -> list[Issue]:
    """DFLASH (and DDTREE, built on it): a drafter, pp 1, agreeing block size, a supported
    draft attention backend (sglang 0.5.23 srt/arg_groups/speculative_hook.py `_handle_dflash`).
    What `_handle_dflash` decides by release (DP attention, the draft window) is its own to
    say: the engine dry-start runs it (repro.realengine.drystart)."""
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
    out += _draft_backend(ctx, algo)
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
    """DDTREE without a budget verifies block_size - 1 draft tokens: a chain (DDTREE_PR)."""
    spec = ctx.recipe.speculative
    if spec is None or spec.algorithm != "DDTREE" or spec.ddtree_budget is not None:
        return []
    return [
        warn(
            ("speculative", "ddtree_budget"),
            "DDTREE without ddtree_budget uses the drafter's block_size - 1: spine mode (a "
            f"chain), no tree ({DDTREE_PR}, ddtree_worker.py); set it, budget + 1 tokens are "
            "verified per step",
            "ddtree",
        )
    ]


def rule_ddtree_spine(ctx: Context) -> list[Issue]:
    """A DDTREE budget <= block_size - 1 is "spine mode": one linear chain, no tree
    (DDTREE_PR, python/sglang/srt/speculative/ddtree_worker.py)."""
    spec = ctx.recipe.speculative
    block = draft_tokens(ctx)
    if spec is None or spec.algorithm != "DDTREE" or spec.ddtree_budget is None or block is None:
        return []
    budget = spec.ddtree_budget
    if budget > block - 1:
        return []
    return [
        warn(
            ("speculative", "ddtree_budget"),
            f"ddtree_budget {budget} with block size {block} is spine mode (a chain): a budget "
            f"up to block_size - 1 = {block - 1} verifies one linear chain of draft tokens and "
            f"builds no tree ({DDTREE_PR}, ddtree_worker.py); a tree needs a budget of at least "
            f"{block}",
            "ddtree-spine",
        )
    ]


def _agrees(given: str | bool, wanted: int | float | str | bool) -> bool:
    if isinstance(wanted, bool) or isinstance(given, bool):
        return str(given).lower() == str(wanted).lower()
    if isinstance(wanted, int | float):
        try:
            return float(given) == float(wanted)
        except ValueError:
            return False
    return given == wanted


def _full_tree(ctx: Context) -> bool | None:
    """DDTREE's full-tree mode: a budget above block_size - 1 (DDTREE_PR, `_handle_ddtree`);
    None when the budget or the block size is not known before a lock."""
    spec, block = ctx.recipe.speculative, draft_tokens(ctx)
    if spec is None or spec.ddtree_budget is None or block is None:
        return None
    return spec.ddtree_budget > block - 1


def _constraint_issue(ctx: Context, algo: str, rule: OptionConstraint) -> Issue | None:
    """What one declared constraint says of the recipe, if anything."""
    opt = ctx.catalog.find(rule.option) if ctx.catalog else None
    given = ctx.options.get(opt.dest) if opt else None
    if given is None and rule.fallback and ctx.catalog:
        fallback = ctx.catalog.find(rule.fallback)
        given = ctx.options.get(fallback.dest) if fallback else None
    mode = f"{algo} full-tree mode" if rule.when == "full_tree" else algo
    wanted = str(rule.value).lower() if isinstance(rule.value, bool) else rule.value
    if given is None:
        if not rule.explicit:
            return None
        spelling = rule.fallback or rule.option
        return err(
            ("server", "extra_args"),
            f"{mode} requires {rule.option} {wanted}, and checks the value before SGLang "
            f"applies its default: set {spelling} {wanted} in server.extra_args "
            f"({rule.source})",
            "patch-constraint",
        )
    if rule.effect == "refuses":
        return err(given.loc, f"{mode} rejects {rule.option} ({rule.source})", "patch-constraint")
    assert rule.value is not None
    if rule.effect == "minimum":
        number = _number(given.value)
        if number is not None and number < float(rule.value):
            message = f"{mode} requires {rule.option} >= {wanted}, got {given.value}"
            return err(given.loc, f"{message} ({rule.source})", "patch-constraint")
        return None
    if _agrees(given.value, rule.value) or (rule.replaces and given.value != rule.replaces):
        return None
    if rule.effect == "requires":
        message = f"{mode} requires {rule.option} {wanted}, got {given.value}"
        return err(given.loc, f"{message} ({rule.source})", "patch-constraint")
    message = f"{mode} forces {rule.option} {wanted}; {given.value} is overridden"
    return warn(given.loc, f"{message} ({rule.source})", "patch-constraint")


def _number(value: str | bool) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def rule_patch_constraints(ctx: Context) -> list[Issue]:
    """What a patch set's algorithm requires, refuses or forces of other options, as its
    image spec declares (`patch_set.provides.constraints`, e.g. DDTREE's page size 1)."""
    algo = algorithm(ctx)
    if algo is None or ctx.image is None:
        return []
    full_tree = _full_tree(ctx)
    out = []
    for rule in ctx.image.provides.constraints:
        if rule.algorithm != algo or (rule.when == "full_tree" and not full_tree):
            continue
        issue = _constraint_issue(ctx, algo, rule)
        if issue is not None:
            out.append(issue)
    return out


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
    """The speculative algorithm is registered in the image (builtin, a reserved alias such
    as NEXTN, or from its patch set)."""
    algo = algorithm(ctx)
    if algo is None or ctx.catalog is None:
        return []
    if ctx.catalog.has_algorithm(ALGORITHM_ALIASES.get(algo, algo)):
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


def rule_running_requests(ctx: Context) -> list[Issue]:
    """Speculative decoding caps an unset --max-running-requests at 48: a sweep past it
    measures a queue (SPECULATIVE_RUNNING_DEFAULT)."""
    algo = algorithm(ctx)
    if algo is None or algo in UNCAPPED_ALGORITHMS or "max_running_requests" in ctx.options:
        return []
    if ctx.recipe.server.max_running_requests is not None:
        return []
    levels = sorted(set(ctx.recipe.bench.concurrencies))
    above = [str(c) for c in levels if c > SPECULATIVE_RUNNING_DEFAULT]
    if not above:
        return []
    return [
        warn(
            ("server", "max_running_requests"),
            f"unset, SGLang's default of {SPECULATIVE_RUNNING_DEFAULT} running requests for "
            f"speculative decoding (srt/arg_groups/speculative_hook.py) makes bench levels "
            f"{', '.join(above)} measure a queue; set server.max_running_requests to {levels[-1]}",
            "max-running-requests",
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
