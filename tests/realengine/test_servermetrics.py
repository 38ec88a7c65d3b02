"""The client's quantile names the same rank as the server's histogram: the same latencies
land in the same bucket on both sides, however the requests are spread."""

from __future__ import annotations

import random

import pytest

from repro.realengine.servermetrics import Histogram, quantile

BOUNDS = (0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0, float("inf"))


def histogram_of(values: list[float]) -> Histogram:
    """What SGLang's Prometheus histogram holds after observing `values` (`le` buckets)."""
    cumulative = [float(sum(1 for v in values if v <= b)) for b in BOUNDS]
    return Histogram(BOUNDS, tuple(cumulative), sum(values))


SPLIT_LEVEL = [0.172, 0.171, 0.348, 0.348, 3.16, 3.16, 4.1, 4.1]
"""A loaded host's level at c=2: two pairs ran fast, two stalled (E2E, seconds)."""


@pytest.mark.parametrize("seed", [None, 1, 2, 3, 4, 5])
@pytest.mark.parametrize("q", [0.5, 0.9, 0.99])
def test_the_same_latencies_land_in_the_same_bucket(seed: int | None, q: float) -> None:
    rng = random.Random(seed)
    values = SPLIT_LEVEL if seed is None else [rng.expovariate(1.0) for _ in range(seed * 7)]
    low, high = histogram_of(values).bucket_of_quantile(q)
    assert low < quantile(values, q) <= high
