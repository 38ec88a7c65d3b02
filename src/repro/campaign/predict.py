"""A point's sweep predicted by the simulator's own model in virtual time (repro.sim.virtual):
seconds for what takes hours, labelled as a prediction with the profile's provenance.

The point is rendered as `repro run R --sim` would run it (its simulated twin: the recipe's own
argv and environment, forced acceptance included, on the simulator image, the profile of its
model, layout and GPU), and every level is
summarised by the bench's own `summarize_level`, so a predicted level and a measured one mean
the same thing key by key.

The shipped `random` and `chat` sets are fitted to input_len *words*, which the simulator's
tokenizer (like a model's) counts as more tokens; the virtual requests get the mean length of
a sample of those very prompts in the simulator's tokens (chat at 1024: about 1400), as the
real run's prompts would have. Other datasets are taken at input_len.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path

from repro.bench.client.result import RequestResult
from repro.bench.metrics import summarize_level
from repro.bench.prompts.benchsets import (
    BENCH_SETS,
    PROTOCOL_CONCURRENCY,
    PROTOCOL_MAX_NEW_TOKENS,
)
from repro.bench.prompts.sets import SHIPPED_SETS, bench_prompts, bench_source, load_prompt_set
from repro.bench.slo import searched_concurrencies
from repro.campaign.caveats import assumed_inputs, caveats
from repro.errors import ReproError
from repro.lock import load_locked
from repro.lock.draft_tokens import BLOCK_ALGORITHMS, DraftTokens, current_draft_tokens
from repro.recipe import load_recipe
from repro.recipe.render import render_env, render_server_argv
from repro.run.simulate import simulated_recipe
from repro.schema.level import Level, closed
from repro.schema.recipe import Bench, Recipe
from repro.sim.config import StartupError, resolve
from repro.sim.profile import (
    CATEGORIES,
    PROFILE_DIR,
    Profile,
    ProfileError,
    list_profiles,
    load_profile,
    profile_path,
)
from repro.sim.registry import Registry
from repro.sim.request import mean_output_tokens
from repro.sim.select import choose_profile, gpu_token, layout, layout_text
from repro.sim.server_argparser import load_catalog, shipped_catalog
from repro.sim.textgen import Tokenizer
from repro.sim.virtual import VirtualLevel, VirtualServer

# the time scale a plan's numbers are stated at
PLAN_CLOCK = "1 (predicted in the simulator's virtual time, as on the real machine's clock)"
PROMPT_SAMPLE = 32  # prompts tokenized to weigh a shipped set's prompts
MAX_PREDICTED_TOKENS = 20_000_000
"""Output tokens one point's prediction simulates at most (about a minute here): a plan that
asks for more is not predicted, and says so, before the first request is simulated."""
ACCEPT_PROMPT_TOKENS = 256  # assumed length of an accept set's prompts repro does not ship


@dataclass(frozen=True)
class Prediction:
    """A point's levels as the profile predicts them, and where the numbers come from."""

    profile: str
    provenance: str  # the profile's own: "calibrated: ..." or "extrapolated: ..."
    levels: list[Level]
    caveats: list[str]  # what the numbers stand on (repro.campaign.caveats)
    assumed: list[str]  # what of it is assumed, in short names (repro.campaign.assumed)
    accept_s: float = 0.0  # the accept stage's predicted duration (0: the point has none)
    warmups_s: float = 0.0  # the levels' warm-ups (each level's, before its requests)


def predict_point(recipe_file: Path, work_dir: Path, on: str | None = None) -> Prediction:
    """The sweep of the recipe in `recipe_file`, predicted (on the profile `on`, a name or a
    JSON file, else the one of its layout); its simulated twin is written under `work_dir` (a
    scratch folder the caller owns)."""
    original = load_recipe(recipe_file)
    _check_size(original.bench, recipe_file)
    if original.simulator is not None:  # a simulator recipe is its own twin
        locked = load_locked(recipe_file)
    else:
        if on is None:
            _check_profile(original)
        locked = load_locked(_twin(recipe_file, work_dir, on))
    recipe = locked.recipe
    drafts = current_draft_tokens(original)
    spec = original.speculative
    if drafts is None and spec is not None and spec.algorithm in BLOCK_ALGORITHMS:
        # the simulator would read the drafter's folder, a path the recipe chose: never here
        raise ReproError(
            f"{recipe_file}: its draft tokens per step are unknown (no locked config.json of "
            "its drafter, no assumed block size for its model)",
            hint="set speculative.num_draft_tokens, or `repro lock` it",
        )
    if locked.catalog is None or recipe.simulator is None:
        raise ReproError(f"{recipe_file}: cannot render its simulated twin")
    argv = render_server_argv(recipe, locked.catalog)
    # the image's SGLang command line and algorithms, as its simulator would parse them
    flags = shipped_catalog(locked.catalog.sglang_version)
    registry = Registry(
        tuple(dict.fromkeys([*locked.catalog.speculative_algorithms, "NONE"])),
        f"catalog of image {recipe.image}",
    )
    try:
        profile = load_profile(on or recipe.simulator.profile)
        with contextlib.redirect_stderr(io.StringIO()) as err:  # argparse's own message
            cfg = resolve(
                argv,
                profile=profile,
                registry=registry,
                env=render_env(recipe),
                catalog=load_catalog(str(flags)) if flags else None,
            )
    except (ProfileError, StartupError) as exc:
        raise ReproError(f"{recipe_file}: the simulator refuses it: {exc}") from None
    except SystemExit:
        raise ReproError(
            f"{recipe_file}: the simulator refuses its argv: {err.getvalue().strip()[-300:]}"
        ) from None
    server = VirtualServer(cfg, seed=recipe.simulator.seed)
    # the same source as the twin's draft tokens (repro.lock.draft_tokens), where assumed
    drafts = drafts if drafts is not None and drafts.assumed else None
    bench = recipe.bench
    category = "random" if bench.dataset == "random" else "chat"
    gpus = original.topology.gpus
    levels: list[Level] = []
    warmups: list[float] = []
    input_len = prompt_tokens(bench)

    def measure(concurrency: int) -> None:
        for repeat in range(bench.repeats):
            run = server.run_level(
                concurrency,
                bench.level_prompts(closed(concurrency)),
                input_len=input_len,
                output_len=bench.output_len,
                category=category,
                warmup=bench.warmup,
            )
            levels.append(_summary(run, repeat, gpus))
            warmups.append(run.warmup_s)

    # a server of its own, so that the sweep's prediction does not depend on the accept's
    accept_s = _accept(VirtualServer(cfg, seed=recipe.simulator.seed), recipe)
    for concurrency in bench.concurrencies:
        measure(concurrency)
    for found in searched_concurrencies(lambda: levels, bench):  # as the sweep searches
        measure(found)
    return Prediction(
        profile.name,
        profile.provenance,
        levels,
        [*caveats(cfg, levels, category, input_len), *_draft_tokens_caveat(drafts)],
        [*assumed_inputs(cfg), *([f"draft tokens {drafts.value}"] if drafts else [])],
        accept_s,
        sum(warmups),
    )


def _draft_tokens_caveat(drafts: DraftTokens | None) -> list[str]:
    """The caveat of a point whose draft tokens per step are assumed."""
    return [f"draft tokens per step {drafts.label()}"] if drafts is not None else []


def _accept(server: VirtualServer, recipe: Recipe) -> float:
    """The accept stage's seconds: each prompt set's warm-up and prompts one at a time
    (PROTOCOL_CONCURRENCY), as long as the set's prompts in the simulator's tokens (a set
    that is not shipped: ACCEPT_PROMPT_TOKENS), each as long as the mean output of requests
    that stop at the simulator's EOS (the profile's mean output before it) or at the set's
    new-token limit, whichever comes first (`sim.request.mean_output_tokens`)."""
    plan = recipe.accept
    if plan is None or recipe.drafter is None:  # the accept stage skips such a point
        return 0.0
    started = server.clock.t
    tokenizer = Tokenizer()
    for ref in plan.prompt_sets:
        input_len = ACCEPT_PROMPT_TOKENS
        if ref in SHIPPED_SETS:
            prompts = load_prompt_set(ref).prompts
            input_len = round(sum(len(tokenizer.encode(p)) for p in prompts) / len(prompts))
        max_new = PROTOCOL_MAX_NEW_TOKENS if ref in BENCH_SETS else plan.max_new_tokens
        server.run_level(
            PROTOCOL_CONCURRENCY,
            plan.prompts,
            input_len=input_len,
            output_len=round(mean_output_tokens(server.cfg.profile.mean_output_tokens, max_new)),
            category=ref if ref in CATEGORIES else "chat",
            warmup=PROTOCOL_CONCURRENCY,
        )
    return server.clock.t - started


def _twin(recipe_file: Path, work_dir: Path, on: str | None) -> Path:
    """The simulated twin; with a profile file `on` (a fitted one, which a recipe cannot
    name), the twin names its layout's profile, or `demo` where it has none: only `on` is
    read."""
    if on is None or profile_path(on).parent == PROFILE_DIR:
        return simulated_recipe(str(recipe_file), work_dir, on, 1.0)
    try:
        return simulated_recipe(str(recipe_file), work_dir, None, 1.0)
    except ReproError:
        return simulated_recipe(str(recipe_file), work_dir, "demo", 1.0)


def _check_profile(recipe: Recipe) -> None:
    """A recipe no profile states is refused naming the closest profile and the flag."""
    p = recipe.parallelism
    sizes, gpus = (p.tp, p.pp, p.ep), list(recipe.topology.gpu_models)
    try:
        choose_profile(recipe.name, recipe.model.repo, sizes, gpus)
    except ProfileError:
        name, differs = closest_profile(recipe.model.repo, sizes, gpus)
        raise ReproError(
            f"no profile is of {recipe.model.repo}, {layout_text(sizes)} on "
            f"{' or '.join(gpus) or 'any GPU'}; closest: {name} ({', '.join(differs)}); "
            f"plan on it with --profile {name}",
            hint="`repro sim profiles` lists the profiles",
        ) from None


def closest_profile(
    model_repo: str, sizes: tuple[int, int, int], gpu_models: list[str]
) -> tuple[str, list[str]]:
    """The shipped profile nearest a recipe's model, layout and GPU (in that order; a model
    whose name starts as the profile's counts as its kin, e.g. an NVFP4 export), and what of
    it differs from the recipe's."""
    gpus = {gpu_token(m) for m in gpu_models}
    name = model_repo.rsplit("/", 1)[-1].lower()

    def differs(profile: Profile) -> list[str]:
        theirs = str(profile.deployment.get("model_repo", ""))
        gpu = str(profile.deployment.get("gpu", "?"))
        return [
            *([f"model {theirs}"] if theirs != model_repo else []),
            *([layout_text(layout(profile))] if layout(profile) != sizes else []),
            *([f"GPU {gpu}"] if gpus and gpu_token(gpu) not in gpus else []),
        ]

    def rank(profile: Profile) -> tuple[bool, bool, bool, bool, str]:
        theirs = str(profile.deployment.get("model_repo", ""))
        kin = bool(theirs) and name.startswith(theirs.rsplit("/", 1)[-1].lower())
        gpu = gpu_token(str(profile.deployment.get("gpu", "")))
        return (
            theirs != model_repo,
            not kin,
            layout(profile) != sizes,
            bool(gpus) and gpu not in gpus,
            profile.name,
        )

    best = min(list_profiles(), key=rank)
    return best.name, differs(best) or ["the same deployment"]


def predicted_requests(bench: Bench) -> int:
    """Requests a prediction of `bench` simulates at most, counted from the plan: each level
    (the ladder's, and the SLO search's at most) times its repeats, warm-up included."""
    searched = bench.slo_search.extra_levels if bench.slo_search is not None else 0
    levels = len(bench.concurrencies) + searched
    return levels * bench.repeats * (bench.prompts_per_level + bench.warmup)


def _check_size(bench: Bench, recipe_file: Path) -> None:
    requests = predicted_requests(bench)
    tokens = requests * bench.output_len
    if tokens > MAX_PREDICTED_TOKENS:
        raise ReproError(
            f"{recipe_file}: not predicted: its plan simulates up to {requests} requests of "
            f"{bench.output_len} output tokens ({tokens:.3g} tokens), more than the "
            f"{MAX_PREDICTED_TOKENS:.3g} a prediction runs",
            hint="fewer levels, prompts_per_level, repeats or a shorter output_len",
        )


def prompt_tokens(bench: Bench) -> int:
    """How long the sweep's prompts are in the simulator's tokens (see the module docstring)."""
    if bench.dataset not in ("random", "chat"):
        return bench.input_len
    prompts = bench_prompts(bench_source(bench.dataset), PROMPT_SAMPLE, bench.input_len)
    tokenizer = Tokenizer()
    return round(sum(len(tokenizer.encode(p)) for p in prompts) / len(prompts))


def _summary(run: VirtualLevel, repeat: int, gpus: int) -> Level:
    results = [
        RequestResult(
            concurrency=run.concurrency,
            repeat=repeat,
            index=index,
            ok=True,
            prompt_tokens=r.prompt_tokens,
            completion_tokens=r.completion_tokens,
            spec_verify_ct=r.spec_verify_ct,
            ttft_s=r.ttft_s,
            chunk_gap_s=r.chunk_gap_s,
            chunk_tokens=r.chunk_tokens,
            e2e_s=r.e2e_s,
            start_s=r.start_s,
            finish_reason="length",
        )
        for index, r in enumerate(run.requests)
    ]
    return summarize_level(
        results, concurrency=run.concurrency, repeat=repeat, duration=run.duration, gpus=gpus
    )
