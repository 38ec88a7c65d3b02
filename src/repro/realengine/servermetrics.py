"""The server's own Prometheus counters and histograms around a level, and the client's
timings laid on the server's buckets.

SGLang observes, per request, `sglang:time_to_first_token_seconds`,
`sglang:e2e_request_latency_seconds` and, per output chunk, `sglang:inter_token_latency_seconds`
(the chunk's gap over its tokens, counted once per token: the convention repro's `itl_s`
follows), and counts `sglang:generation_tokens_total` (sglang/srt/observability/
metrics_collector.py). Two `/metrics` pages taken before and after a level give the server's
view of exactly that level's requests; the client's values, binned on the same bucket bounds,
say where the two agree and how much of a latency is the client's.
"""

from __future__ import annotations

import bisect
import math
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from repro.errors import ReproError

TTFT = "sglang:time_to_first_token_seconds"
ITL = "sglang:inter_token_latency_seconds"
E2E = "sglang:e2e_request_latency_seconds"
GENERATION_TOKENS = "sglang:generation_tokens"  # the counter family; samples end in _total


@dataclass(frozen=True)
class Histogram:
    """One histogram summed over its label sets: upper bounds (the last is +Inf) and the
    cumulative count at each."""

    bounds: tuple[float, ...]
    cumulative: tuple[float, ...]
    sum: float

    @property
    def count(self) -> float:
        return self.cumulative[-1] if self.cumulative else 0.0

    def minus(self, earlier: Histogram) -> Histogram:
        if earlier.bounds != self.bounds:
            raise ReproError("the server's histogram buckets changed between two scrapes")
        return Histogram(
            self.bounds,
            tuple(a - b for a, b in zip(self.cumulative, earlier.cumulative, strict=True)),
            self.sum - earlier.sum,
        )

    def fractions(self) -> list[float]:
        """The cumulative share of observations at each bound."""
        total = self.count
        return [c / total if total else math.nan for c in self.cumulative]

    def quantile(self, q: float) -> float:
        """Prometheus' `histogram_quantile`: linear within the bucket where the rank falls."""
        rank = q * self.count
        i = bisect.bisect_left(self.cumulative, rank)
        i = min(i, len(self.bounds) - 1)
        upper = self.bounds[i]
        lower = self.bounds[i - 1] if i > 0 else 0.0
        if math.isinf(upper):
            return lower
        below = self.cumulative[i - 1] if i > 0 else 0.0
        inside = self.cumulative[i] - below
        return lower + (upper - lower) * ((rank - below) / inside if inside else 1.0)

    def bucket_of_quantile(self, q: float) -> tuple[float, float]:
        """The (lower, upper] bucket where the server's q-quantile lies."""
        i = min(bisect.bisect_left(self.cumulative, q * self.count), len(self.bounds) - 1)
        return (self.bounds[i - 1] if i > 0 else 0.0), self.bounds[i]


@dataclass(frozen=True)
class Snapshot:
    """Counters and histograms of one `/metrics` page, each summed over its label sets."""

    counters: dict[str, float]
    histograms: dict[str, Histogram]

    def minus(self, earlier: Snapshot) -> Snapshot:
        return Snapshot(
            {k: v - earlier.counters.get(k, 0.0) for k, v in self.counters.items()},
            {
                k: h.minus(earlier.histograms[k]) if k in earlier.histograms else h
                for k, h in self.histograms.items()
            },
        )

    def histogram(self, name: str) -> Histogram:
        if name not in self.histograms:
            raise ReproError(f"the server's /metrics has no histogram {name}")
        return self.histograms[name]


def parse_snapshot(text: str) -> Snapshot:
    counters: dict[str, float] = {}
    histograms: dict[str, Histogram] = {}
    for family in text_string_to_metric_families(text):
        if family.type == "counter":
            counters[family.name] = sum(
                s.value for s in family.samples if s.name == f"{family.name}_total"
            )
        elif family.type == "histogram":
            by_bound: dict[float, float] = {}
            total = 0.0
            for s in family.samples:
                if s.name.endswith("_bucket"):
                    bound = float(s.labels["le"])
                    by_bound[bound] = by_bound.get(bound, 0.0) + s.value
                elif s.name.endswith("_sum"):
                    total += s.value
            bounds = tuple(sorted(by_bound))
            histograms[family.name] = Histogram(bounds, tuple(by_bound[b] for b in bounds), total)
    return Snapshot(counters, histograms)


def fetch_snapshot(url: str, timeout_s: float = 10.0) -> Snapshot:
    """The server's `/metrics` now (it must run with `--enable-metrics`)."""
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/metrics", timeout=timeout_s) as resp:
            return parse_snapshot(resp.read().decode("utf-8", errors="replace"))
    except OSError as err:
        raise ReproError(
            f"could not read {url}/metrics: {err}",
            hint="start the server with --enable-metrics",
        ) from err


def client_fractions(values: Sequence[float], bounds: Sequence[float]) -> list[float]:
    """The cumulative share of the client's `values` at each of the server's bounds."""
    ordered = sorted(values)
    n = len(ordered)
    return [bisect.bisect_right(ordered, b) / n if n else math.nan for b in bounds]


def quantile(values: Sequence[float], q: float) -> float:
    """The client's value at the rank where `Histogram.bucket_of_quantile` looks for the
    server's q-quantile: the first value whose cumulative count reaches q * n. Client and
    server then name the same request's rank. Interpolating between two values (numpy's
    default) can land in a gap between two requests that no server bucket holds: p50 of 8
    requests whose latencies are 0.35 s and 3.2 s, in two groups of four, is 1.75 s."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    n = len(ordered)
    return ordered[min(bisect.bisect_left(range(1, n + 1), q * n), n - 1)]
