"""Acceptance by bucket: of context length (the prompt's tokens) and of output position.

Buckets: repro.schema.buckets (`0-8k,8k-32k,32k-`, in tokens).

Context length: accept chooses, per bucket, the set's first `prompts` prompts whose length
falls in it, as repro.bench.prompts.lengths estimates it; a prompt longer than every bucket
is not sent (a document beyond the server's context would only fail). The acceptance of a
bucket is then of the requests whose prompt_tokens, as the server counted them, fall in it.

Output position: each verify step is placed at the output position of the first token it
commits (the prefill's token is position 0), from the streamed response's chunks: on SGLang
with the default --stream-interval 1 a chunk is one verify step, unless the server merged
steps that the client had not read yet (a busy server, concurrency above 1), which the
bucket then counts as one longer step. A bucket's acceptance is the tokens its steps
committed over its steps, pooled over requests, with a bootstrap interval over requests.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from repro.bench.accept.completion import Completion
from repro.bench.metrics import bootstrap, seeded_rng
from repro.schema.accept import AcceptSet, BucketAcceptance
from repro.schema.buckets import Bucket


def _stats(
    bucket: Bucket, tokens: np.ndarray, steps: np.ndarray, rng: np.random.Generator
) -> BucketAcceptance:
    """One bucket from each request's (tokens, steps) in it (zero steps: not there)."""
    there = steps > 0
    total_steps = int(steps.sum())
    return BucketAcceptance(
        bucket=bucket.label,
        low=bucket.low,
        high=bucket.high,
        prompts=int(there.sum()),
        completion_tokens=int(tokens.sum()),
        spec_verify_ct=total_steps,
        accept_length=float(tokens.sum() / total_steps) if total_steps else None,
        accept_length_ci95=bootstrap(
            lambda t, s: t.sum(axis=1) / np.maximum(s.sum(axis=1), 1),
            [tokens[there], steps[there]],
            rng,
        ),
        per_prompt=[float(t / s) if s else None for t, s in zip(tokens, steps, strict=True)],
    )


def by_length(
    name: str, results: Sequence[Completion], buckets: list[Bucket]
) -> list[BucketAcceptance]:
    """Each bucket's acceptance over the requests whose prompt_tokens fall in it."""
    out = []
    for bucket in buckets:
        inside = [
            r.ok and bool(r.spec_verify_ct) and bucket.holds(r.prompt_tokens) for r in results
        ]
        tokens = np.array(
            [r.completion_tokens if i else 0 for r, i in zip(results, inside, strict=True)]
        )
        steps = np.array(
            [r.spec_verify_ct or 0 if i else 0 for r, i in zip(results, inside, strict=True)]
        )
        out.append(_stats(bucket, tokens.astype(float), steps.astype(float), seeded_rng(name)))
    return out


def _placed(result: Completion, buckets: list[Bucket]) -> tuple[list[int], list[int]]:
    """Tokens and steps per bucket of one request's verify steps, by output position."""
    tokens, counts = [0] * len(buckets), [0] * len(buckets)
    if not result.ok:
        return tokens, counts
    # the first chunk's tokens (the prefill's, and any step merged into it) come first
    position = result.completion_tokens - sum(result.steps)
    for committed in result.steps:
        for k, bucket in enumerate(buckets):
            if bucket.holds(position):
                tokens[k] += committed
                counts[k] += 1
                break
        position += committed
    return tokens, counts


def by_position(
    name: str, results: Sequence[Completion], buckets: list[Bucket]
) -> list[BucketAcceptance]:
    """Each bucket's acceptance over the verify steps that start in it."""
    placed = [_placed(r, buckets) for r in results]
    return [
        _stats(
            bucket,
            np.array([t[k] for t, _ in placed], dtype=float),
            np.array([s[k] for _, s in placed], dtype=float),
            seeded_rng(name),
        )
        for k, bucket in enumerate(buckets)
    ]


def add_buckets(
    result: AcceptSet,
    results: Sequence[Completion],
    length: list[Bucket] | None,
    position: list[Bucket] | None,
) -> None:
    """The set's acceptance by context length and by output position, as asked."""
    result.prompt_tokens_per_prompt = [r.prompt_tokens if r.ok else None for r in results]
    if length:
        result.by_length = by_length(result.prompt_set, results, length)
    if position:
        result.by_position = by_position(result.prompt_set, results, position)
