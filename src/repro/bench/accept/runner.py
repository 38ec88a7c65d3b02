"""`repro accept`: the drafter's acceptance length per prompt set, measured per request.

For each recipe: check the server is SGLang and speculative, `/flush_cache`, then for each
prompt set send `concurrency` warmup requests (the set's first prompts) and measure the next
`prompts` prompts (cycling through a shorter set), chat-formatted (the model's chat template,
else the built-in ChatML one, `enable_thinking` as asked), non-streaming to `/generate` at
temperature 0, top_p 1, top_k 1: z-lab's DFlash benchmark protocol (repro.bench.prompts.benchsets,
which also names the sets that reproduce its datasets). From each response's `meta_info`
(tokenizer_manager.py) come `completion_tokens`, `spec_verify_ct` and the accepted-drafts
histogram; a set's acceptance is reported both pooled, sum(completion_tokens) /
sum(spec_verify_ct), and as the mean of per-request values (z-lab's), each with a 95%
bootstrap interval; never the server's cumulative `avg_spec_accept_length`.

Every call to a server goes through one ServerSession per server (repro.bench.session): its
identity is pinned when the run starts and checked again after each prompt set. A bare URL
(no recipe) is measured as it answers: the default sets, its identity recorded as found.

With a baseline (a recipe without the drafter, or a URL) the same requests go there too, for
the speedup; `check_lossless` compares each prompt's output token ids with and without the
drafter at the run's concurrency and at the recipe's top bench concurrency. With several
recipes every later one is compared with the first, paired by prompt (drafter A/B).

With `accuracy` every set needs an answer key (gsm8k-style, repro.bench.prompts.answers);
each response's final number is scored for the recipe and the baseline and the gate's
verdict written to `accuracy.json` (repro.bench.accept.accuracy); a server without a drafter
is then measured too (its acceptance empty): the gate needs no drafter.

The results go to `accept.json` in a run folder (repro.bench.accept.record), one prompt set
at a time as each ends: a new `runs/<UTC>-<recipe>-accept/`, or an existing bench run given
as `output`; `resume` continues a run that failed part-way, measuring only its missing sets.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from repro.bench.accept.accuracy import AccuracyRecord, open_accuracy, score_set
from repro.bench.accept.buckets import add_buckets
from repro.bench.accept.completion import (
    Batch,
    BatchSender,
    Completion,
    Payload,
    Sender,
    body,
    response_bound,
)
from repro.bench.accept.record import open_record
from repro.bench.accept.stats import lossless_level, paired_difference, set_result
from repro.bench.accept.streamed import StreamedSender
from repro.bench.client.bounded import Bound
from repro.bench.forced import run_forced_acceptance
from repro.bench.opening import Opening, open_server
from repro.bench.options import AcceptOptions
from repro.bench.prompts.answers import with_answers
from repro.bench.prompts.benchsets import (
    BENCH_SETS,
    PROTOCOL,
    PROTOCOL_MAX_NEW_TOKENS,
    PROTOCOL_SAMPLING,
    Sampling,
)
from repro.bench.prompts.chattemplate import ChatTemplate
from repro.bench.prompts.datasets import PromptSet
from repro.bench.prompts.lengths import CHARS_PER_TOKEN, choose_by_length
from repro.bench.prompts.sets import load_prompt_set
from repro.bench.server import speculative_algorithm
from repro.bench.target import BenchTarget
from repro.errors import ReproError
from repro.runfolder import RunFolder
from repro.schema.accept import (
    AcceptDiff,
    AcceptProtocol,
    AcceptResults,
    AcceptSet,
    LosslessCheck,
    SimulatedProfile,
)
from repro.schema.accuracy import AccuracyResults
from repro.schema.buckets import Bucket
from repro.schema.recipe import Recipe
from repro.schema.serverinfo import ServerInfo

__all__ = ["AcceptOptions", "AcceptResult", "lossless_failure", "run_accept"]

DEFAULT_SETS = ["math", "code", "chat"]


@dataclass
class AcceptResult:
    recipe_name: str
    run_dir: Path
    simulated: bool
    algorithm: str | None
    sets: list[AcceptSet]
    results: AcceptResults
    accuracy: AccuracyResults | None = None  # with opts.accuracy


@dataclass
class SetPlan:
    """One prompt set's requests: warmup (not measured) and measured, in order."""

    prompt_set: PromptSet
    max_new_tokens: int
    warmup: list[Payload]
    measured: list[Payload]
    answers: list[str] | None = None  # the key's final number per measured prompt


def _prompt_sets(recipe: Recipe | None, opts: AcceptOptions) -> list[PromptSet]:
    plan = recipe.accept if recipe else None
    set_refs = opts.prompt_sets or (plan.prompt_sets if plan else DEFAULT_SETS)
    loaded = [load_prompt_set(ref) for ref in set_refs]
    return [with_answers(ps) for ps in loaded] if opts.accuracy else loaded


def _plan(
    recipe: Recipe | None,
    opts: AcceptOptions,
    prompt_sets: list[PromptSet],
    template: ChatTemplate,
) -> tuple[list[SetPlan], bool]:
    plan = recipe.accept if recipe else None
    count = opts.prompts or (plan.prompts if plan else 32)
    thinking = opts.thinking if opts.thinking is not None else (plan.thinking if plan else False)
    sampling: Sampling = {**PROTOCOL_SAMPLING, "temperature": opts.temperature}
    plans = []
    for ps in prompt_sets:
        protocol_default = PROTOCOL_MAX_NEW_TOKENS if ps.name in BENCH_SETS else None
        max_new = (
            opts.max_new_tokens
            or protocol_default
            or (plan.max_new_tokens if plan else PROTOCOL_MAX_NEW_TOKENS)
        )
        warm = opts.concurrency
        if opts.length_buckets:
            chosen = choose_by_length(ps.prompts, opts.length_buckets, count)
            if not chosen:
                raise ReproError(
                    f"prompt set {ps.name!r}: no prompt falls in the length buckets "
                    f"{', '.join(b.label for b in opts.length_buckets)}",
                    hint=f"buckets count tokens (about {CHARS_PER_TOKEN:g} characters each); "
                    "widen them, or pick a set with longer or shorter prompts",
                )
            picked = [chosen[i % len(chosen)] for i in range(warm)] + chosen
        else:  # z-lab: cycle the set
            picked = [i % len(ps.prompts) for i in range(warm + count)]
        texts = [template.render(ps.prompts[i], thinking=thinking) for i in picked]
        payloads = [body(t, max_new, sampling) for t in texts]
        key = ps.answers
        answers = [key[i] for i in picked[warm:]] if key else None
        plans.append(SetPlan(ps, max_new, payloads[:warm], payloads[warm:], answers))
    return plans, thinking


def _measure(sender: BatchSender, plan: SetPlan, opts: AcceptOptions, label: str) -> Batch:
    """Warm up, then measure one prompt set, telling `opts.progress` the prompts done; then
    check the server still is the one the run started with."""
    warmup, measured = len(plan.warmup), len(plan.measured)
    opts.progress(f"{label}: warm-up 0/{warmup}")
    sender.run(
        plan.warmup,
        opts.concurrency,
        lambda n: opts.progress(f"{label}: warm-up {n}/{warmup}"),
    )
    opts.progress(f"{label}: 0/{measured} prompts")
    batch = sender.run(
        plan.measured,
        opts.concurrency,
        lambda n: opts.progress(f"{label}: {n}/{measured} prompts"),
    )
    session = sender.session
    if not any(r.ok for r in batch.results):
        first = next((r for r in batch.results if r.error), None)
        raise ReproError(
            f"every request of prompt set {plan.prompt_set.name!r} failed at {session.url}"
            + (f" ({first.error})" if first else ""),
            hint="check the server (repro status / logs) and try again",
        )
    session.call(session.server_info())  # ServerChanged when another deployment answers now
    return batch


def _check_speculative(
    url: str, info: ServerInfo, batch: Batch | None = None, *, accuracy: bool = False
) -> None:
    """Acceptance needs a drafter; accuracy alone scores any server."""
    if accuracy:
        return
    if info.reported("speculative_algorithm") and speculative_algorithm(info) is None:
        raise ReproError(
            f"the server at {url} runs without speculative decoding "
            "(speculative_algorithm is null)",
            hint="launch a recipe with a drafter; acceptance length only exists with "
            "speculative decoding (a server without one is the --baseline)",
        )
    if batch is not None and all(r.spec_verify_ct is None for r in batch.results if r.ok):
        raise ReproError(
            f"the server at {url} is not speculative: its responses carry no spec_verify_ct",
            hint="launch a recipe with a drafter (speculative: algorithm DFLASH, ...); "
            "acceptance length only exists with speculative decoding",
        )


def _lossless(
    top: int,
    spec_sender: BatchSender,
    base_sender: BatchSender,
    base_ref: str | None,
    plans: list[SetPlan],
    measured: list[tuple[Batch, Batch]],
    opts: AcceptOptions,
) -> LosslessCheck:
    """At the run's concurrency (the measured batches) and at the top bench concurrency."""
    labels = [(p.prompt_set.name, i) for p in plans for i in range(len(p.measured))]

    def flat(batches: list[Batch]) -> list[Completion]:
        return [r for b in batches for r in b.results]

    levels = [
        lossless_level(
            opts.concurrency, labels, flat([m for m, _ in measured]), flat([b for _, b in measured])
        )
    ]
    if top > opts.concurrency:
        payloads = [p for plan in plans for p in plan.measured]
        total = max(len(payloads), top)  # enough requests to hold `top` in flight
        cycled = [payloads[i % len(payloads)] for i in range(total)]
        cycled_labels = [labels[i % len(labels)] for i in range(total)]
        spec = spec_sender.run(cycled, top).results
        plain = base_sender.run(cycled, top).results
        levels.append(lossless_level(top, cycled_labels, spec, plain))
    return LosslessCheck(
        baseline=base_ref or base_sender.session.url,
        passed=all(not level.divergent and level.prompts for level in levels),
        levels=levels,
    )


def lossless_failure(check: LosslessCheck | None) -> str | None:
    """What a failed lossless check says: the first divergent prompt and position."""
    if check is None or check.passed:
        return None
    for level in check.levels:
        if level.divergent:
            first = level.divergent[0]
            return (
                f"lossless check failed at concurrency {level.concurrency}: "
                f"{len(level.divergent)} of {level.prompts} outputs differ from the baseline's; "
                f"first: prompt {first.prompt} of set {first.prompt_set!r} at output token "
                f"{first.position}"
            )
    return "lossless check failed: no output could be compared"


def _simulated_profile(info: ServerInfo) -> SimulatedProfile | None:
    if not info.sim_profile:
        return None
    return SimulatedProfile(name=info.sim_profile, drafter=info.sim_drafter)


def _sender(opts: AcceptOptions, server: Opening, bound: Bound) -> BatchSender:
    """Whole responses (z-lab's protocol), or streamed ones for acceptance by position."""
    if opts.position_buckets:
        return StreamedSender(server.session, opts.client, server.max_accept)
    return Sender(server.session, bound, server.max_accept)


def _baseline_sender(opts: AcceptOptions, bound: Bound) -> BatchSender | None:
    """The baseline's server, checked to be its recipe's when it names one; sent to as the
    measured server is."""
    baseline = opts.baseline
    if baseline is None:
        return None
    url = baseline.server_url()
    return _sender(opts, open_server(baseline, url, opts.provenance), bound)


def _refuse_options(opts: AcceptOptions) -> None:
    if opts.check_lossless and opts.baseline is None:
        raise ReproError(
            "--check-lossless needs a --baseline to compare with",
            hint="give the same model without the drafter: --baseline RECIPE or --baseline URL",
        )
    if opts.check_lossless and opts.position_buckets:
        raise ReproError(
            "--check-lossless compares output token ids, which streamed responses "
            "(--position-buckets) do not carry",
            hint="run the lossless check and the position buckets as two runs",
        )
    if opts.check_lossless and opts.resume is not None:
        raise ReproError(
            "--check-lossless compares every set's outputs: it cannot resume a run",
            hint="start a new run with --check-lossless",
        )


def _protocol(
    opts: AcceptOptions, template: ChatTemplate, thinking: bool, plans: list[SetPlan]
) -> AcceptProtocol:
    baseline = opts.baseline
    return AcceptProtocol(
        name=PROTOCOL,
        thinking=thinking,
        concurrency=opts.concurrency,
        warmup_requests=opts.concurrency,
        sampling={**PROTOCOL_SAMPLING, "temperature": opts.temperature},
        endpoint="/generate (streaming)" if opts.position_buckets else "/generate (non-streaming)",
        chat_template=template.describe(thinking),
        baseline=baseline.ref if baseline else None,
        prompts_per_set=len(plans[0].measured) if plans else 0,
        max_new_tokens={p.prompt_set.name: p.max_new_tokens for p in plans},
        accuracy=opts.accuracy,
        client_limits=opts.client,
        length_buckets=_labels(opts.length_buckets),
        position_buckets=_labels(opts.position_buckets),
    )


def _labels(buckets: list[Bucket] | None) -> list[str] | None:
    return [b.label for b in buckets] if buckets else None


def accept_one(target: BenchTarget, url: str, opts: AcceptOptions) -> AcceptResult:
    """Acceptance per prompt set of `target`'s server at `url` (against `opts.baseline`)."""
    recipe = target.recipe
    if recipe is not None and recipe.accept is not None and recipe.accept.accuracy:
        opts = replace(opts, accuracy=True)  # the recipe's plan asks for it
    prompt_sets = _prompt_sets(recipe, opts)  # bad input fails before any I/O
    _refuse_options(opts)
    server = open_server(target, url, opts.provenance)
    info, session, simulated = server.info, server.session, server.simulated
    _check_speculative(url, info, accuracy=opts.accuracy)
    bound = response_bound(opts.client)
    sender = _sender(opts, server, bound)
    base_sender = _baseline_sender(opts, bound)
    forced = run_forced_acceptance(recipe, opts.forced, info)
    if forced is not None and opts.accuracy:
        raise ReproError(
            f"the server at {url} runs with forced acceptance ({forced.label()}): it commits "
            "tokens its model did not choose, so its answers are not the model's",
            hint="score accuracy on a server launched without SGLANG_SIMULATE_ACC_LEN",
        )
    template = server.template(opts.chat_template_fallback)
    plans, thinking = _plan(recipe, opts, prompt_sets, template)
    results = AcceptResults(
        simulated=simulated,
        recipe_name=target.name,
        protocol=_protocol(opts, template, thinking, plans),
        simulated_profile=_simulated_profile(info),
        forced_acceptance=forced,
    )
    record = open_record(target, opts, url, server.recorded_info(), results, server.identity)
    done = {s.prompt_set for s in results.sets}
    accuracy = _accuracy_record(record.run_dir, target.name, simulated, opts)
    try:
        session.call(session.flush_cache())
        if base_sender is not None:
            base_sender.session.call(base_sender.session.flush_cache())
        measured = []
        for number, plan in enumerate(plans, 1):
            if plan.prompt_set.name in done:
                continue
            label = f"{target.name}: set {plan.prompt_set.name} ({number}/{len(plans)})"
            batch = _measure(sender, plan, opts, label)
            _check_speculative(url, info, batch, accuracy=opts.accuracy)
            base = _measure(base_sender, plan, opts, f"{label}, baseline") if base_sender else None
            if base is not None:
                measured.append((batch, base))
            name, source = plan.prompt_set.name, plan.prompt_set.source
            result = set_result(name, source, batch, plan.max_new_tokens, base)
            add_buckets(result, batch.results, opts.length_buckets, opts.position_buckets)
            record.save_set(result)
            if accuracy is not None and plan.answers is not None:
                accuracy.save_set(
                    score_set(name, batch, plan.answers),
                    score_set(name, base, plan.answers) if base is not None else None,
                )
        if opts.check_lossless and base_sender is not None:
            base_ref = opts.baseline.ref if opts.baseline else None
            top = max(target.bench.concurrencies)
            results.lossless = _lossless(top, sender, base_sender, base_ref, plans, measured, opts)
    except BaseException as exc:  # a dead server, Ctrl-C: the finished sets stay, resumable
        message = exc.message if isinstance(exc, ReproError) else f"{type(exc).__name__}: {exc}"
        record.finish("failed", message)
        if isinstance(exc, ReproError) and results.sets:
            again = target.ref if target.recipe is not None else f"--url {url}"
            exc.hint = (
                f"the finished sets are kept in {record.run_dir}; continue with "
                f"`repro accept {again} --resume {record.run_dir}`"
            )
        raise
    record.finish("complete")
    algorithm = speculative_algorithm(info)
    return AcceptResult(
        target.name, record.run_dir, simulated, algorithm, results.sets, results,
        accuracy.results if accuracy is not None else None,
    )  # fmt: skip


def _accuracy_record(
    run_dir: Path, name: str, simulated: bool, opts: AcceptOptions
) -> AccuracyRecord | None:
    if not opts.accuracy:
        return None
    baseline = opts.baseline
    base = (baseline.ref or baseline.server_url()) if baseline is not None else None
    return open_accuracy(run_dir, name, simulated, base)


def compare_drafters(results: list[AcceptResult]) -> list[AcceptDiff]:
    """Every later recipe against the first, per prompt set both measured (paired by prompt)."""
    first, diffs = results[0], []
    for other in results[1:]:
        for a in first.sets:
            b = next((s for s in other.sets if s.prompt_set == a.prompt_set), None)
            if b is None:
                continue
            diffs.append(paired_difference(first.recipe_name, a, other.recipe_name, b))
            for (bucket, a_in), (_, b_in) in zip(a.bucketed(), b.bucketed(), strict=False):
                diff = paired_difference(first.recipe_name, a_in, other.recipe_name, b_in)
                diffs.append(diff.model_copy(update={"prompt_set": a.prompt_set, "bucket": bucket}))
    return diffs


def run_accept(targets: list[BenchTarget], opts: AcceptOptions) -> list[AcceptResult]:
    """Acceptance per prompt set for each recipe; with several, the paired A/B differences
    (the same prompts go to each) are added to every accept.json."""
    if opts.urls and len(opts.urls) != len(targets):
        raise ReproError(
            f"{len(opts.urls)} --url for {len(targets)} recipes",
            hint="give one --url per recipe, in the same order, or none",
        )
    if opts.output is not None and len(targets) > 1:
        raise ReproError("--output takes one recipe", hint="omit --output with several recipes")
    out = []
    for i, target in enumerate(targets):
        url = opts.urls[i] if opts.urls else target.server_url()
        out.append(accept_one(target, url.rstrip("/"), opts))
    if len(out) > 1:
        diffs = compare_drafters(out)
        for r in out:
            r.results.comparison = diffs
            RunFolder(r.run_dir).write_accept(r.results)
    return out
