"""The numbers of `repro accept`: a set's acceptance (both conventions with intervals, from
repro.bench.metrics), histogram, output length and speedup; the lossless comparison of output
token ids; and the paired A/B difference of two drafters.
"""

from __future__ import annotations

import numpy as np

from repro.bench.accept.completion import Batch, Completion
from repro.bench.metrics import acceptance_stats, bootstrap, seeded_rng
from repro.schema.accept import AcceptDiff, AcceptSet, Divergence, LosslessLevel
from repro.schema.base import Interval
from repro.schema.dataset import PromptSource


def _throughput(batch: Batch) -> float | None:
    tokens = sum(r.completion_tokens for r in batch.results if r.ok)
    return tokens / batch.wall_s if batch.wall_s > 0 and tokens else None


def _histogram(results: list[Completion]) -> list[int] | None:
    hists = [r.histogram for r in results if r.ok and r.histogram is not None]
    if not hists:
        return None
    total = [0] * max(len(h) for h in hists)
    for h in hists:
        for k, count in enumerate(h):
            total[k] += count
    return total


def implausible_reasons(batch: Batch) -> list[str]:
    """A set whose server sent values no server can send is invalid, however few."""
    bad = [r for r in batch.results if r.implausible]
    if not bad:
        return []
    return [
        f"{len(bad)} of {len(batch.results)} responses held values no server can send "
        f"(first: {bad[0].error})"
    ]


def set_result(
    name: str,
    source: PromptSource,
    batch: Batch,
    max_new_tokens: int,
    baseline: Batch | None = None,
) -> AcceptSet:
    ok = [r for r in batch.results if r.ok]
    spec = [r for r in ok if r.spec_verify_ct]
    stats = acceptance_stats(spec, seeded_rng(name))
    throughput = _throughput(batch)
    base_tp = _throughput(baseline) if baseline else None
    reasons = implausible_reasons(batch) + (implausible_reasons(baseline) if baseline else [])
    return AcceptSet(
        prompt_set=name,
        prompts=len(ok),
        failed=len(batch.results) - len(ok),
        completion_tokens=sum(r.completion_tokens for r in spec),
        spec_verify_ct=sum(r.spec_verify_ct or 0 for r in spec),
        accept_length_per_prompt=[r.accept_length for r in batch.results],
        source=source,
        max_new_tokens=max_new_tokens,
        accept_histogram=_histogram(ok),
        mean_output_tokens=float(np.mean([r.completion_tokens for r in ok])) if ok else None,
        output_throughput=throughput,
        baseline_output_throughput=base_tp,
        speedup=throughput / base_tp if throughput and base_tp else None,
        valid=not reasons,
        reasons=reasons,
        **stats,
    )


def first_divergence(a: list[int], b: list[int]) -> int | None:
    """The first position where two token id lists differ (a length difference counts)."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def lossless_level(
    concurrency: int,
    labels: list[tuple[str, int]],
    with_drafter: list[Completion],
    without: list[Completion],
) -> LosslessLevel:
    """Compare each prompt's output ids; `labels` names each (prompt set, index) in order."""
    compared = identical = 0
    divergent: list[Divergence] = []
    for (set_name, index), spec, plain in zip(labels, with_drafter, without, strict=True):
        if not (spec.ok and plain.ok):
            continue
        compared += 1
        at = first_divergence(spec.output_ids, plain.output_ids)
        if at is None:
            identical += 1
        else:
            divergent.append(Divergence(prompt_set=set_name, prompt=index, position=at))
    return LosslessLevel(
        concurrency=concurrency,
        prompts=compared,
        identical=identical,
        identical_share=identical / compared if compared else 0.0,
        divergent=divergent,
    )


def paired_difference(a_name: str, a: AcceptSet, b_name: str, b: AcceptSet) -> AcceptDiff:
    """B - A on the mean of per-request acceptance, over prompts both measured (same prompts,
    same order), with a paired bootstrap: a difference whose interval holds 0 is noise."""
    pairs = [
        (x, y)
        for x, y in zip(a.accept_length_per_prompt, b.accept_length_per_prompt, strict=False)
        if x is not None and y is not None
    ]
    diffs = np.array([y - x for x, y in pairs], dtype=np.float64)
    interval: Interval | None = None
    if len(diffs):
        interval = bootstrap(lambda d: d.mean(axis=1), [diffs], seeded_rng(a.prompt_set))
    verdict = "within noise"
    if interval is not None and interval.low > 0:
        verdict = "b better"
    elif interval is not None and interval.high < 0:
        verdict = "a better"
    return AcceptDiff(
        prompt_set=a.prompt_set,
        a=a_name,
        b=b_name,
        a_value=float(np.mean([x for x, _ in pairs])) if pairs else None,
        b_value=float(np.mean([y for _, y in pairs])) if pairs else None,
        difference=float(diffs.mean()) if len(diffs) else None,
        ci95=interval,
        pairs=len(pairs),
        verdict=verdict,
    )
