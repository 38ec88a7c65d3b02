"""A bench level's requests by context-length bucket (`repro bench --length-buckets`): for
each bucket, the requests whose prompt_tokens (as the server counted them) fall in it, with
their median TTFT and TPOT and their pooled acceptance, so that a drafter whose acceptance
falls with the context shows where."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from repro.bench.client.stream import RequestResult
from repro.schema.buckets import LengthBucketLevel, parse_buckets


def _median_ms(values: list[float]) -> float | None:
    return float(np.median(values)) * 1000 if values else None


def length_levels(
    results: Sequence[RequestResult], spec: str | None
) -> list[LengthBucketLevel] | None:
    """The level's successful requests by bucket of `spec` (None: no buckets asked)."""
    if spec is None:
        return None
    out = []
    for bucket in parse_buckets(spec, "length_buckets"):
        inside = [r for r in results if r.ok and bucket.holds(r.prompt_tokens)]
        spec_ok = [r for r in inside if r.spec_verify_ct]
        steps = sum(r.spec_verify_ct or 0 for r in spec_ok)
        tpots = [
            (r.e2e_s - r.ttft_s) / (r.completion_tokens - 1)
            for r in inside
            if r.e2e_s is not None and r.ttft_s is not None and r.completion_tokens > 1
        ]
        out.append(
            LengthBucketLevel(
                bucket=bucket.label,
                low=bucket.low,
                high=bucket.high,
                requests=len(inside),
                mean_prompt_tokens=(
                    sum(r.prompt_tokens for r in inside) / len(inside) if inside else None
                ),
                median_ttft_ms=_median_ms([r.ttft_s for r in inside if r.ttft_s is not None]),
                median_tpot_ms=_median_ms(tpots),
                accept_length=(
                    sum(r.completion_tokens for r in spec_ok) / steps if steps else None
                ),
            )
        )
    return out
