"""repro's client-side timings beside the server's own histograms, over the same requests.

`bench_with_server_view` runs `repro bench`'s own sweep (what `repro bench --url` runs) and
takes the server's `/metrics` right before and right after each level's measured requests
(warm-up excluded), so the difference is the server's view of exactly the recorded requests.
`compare` lays the client's per-request TTFT, per-token ITL and E2E on the server's bucket
bounds and reports, per quantile, how much later the client saw each than the server.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from repro.bench import BenchOptions, RequestResult, run_bench
from repro.bench.sweep import BenchResult
from repro.bench.target import BenchTarget
from repro.realengine.servermetrics import (
    E2E,
    ITL,
    TTFT,
    Histogram,
    Snapshot,
    client_fractions,
    fetch_snapshot,
    quantile,
)
from repro.runfolder import RunFolder
from repro.schema.level import Level, Load, RequestRow

QUANTILES = (0.5, 0.9, 0.99)


class _ServerView:
    """A sweep observer: the server's `/metrics` difference over each level's requests."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.before: dict[tuple[Load, int], Snapshot] = {}
        self.deltas: dict[tuple[Load, int], Snapshot] = {}

    def level_started(self, load: Load, repeat: int, total: int) -> None:
        self.before[(load, repeat)] = fetch_snapshot(self.url)

    def request_done(self, result: RequestResult) -> None:
        pass

    def level_done(self, summary: Level) -> None:
        self.deltas[summary.key] = fetch_snapshot(self.url).minus(self.before.pop(summary.key))


@dataclass
class MeasuredLevel:
    endpoint: str
    level: Level
    rows: list[RequestRow]
    server: Snapshot = field(repr=False)


def bench_with_server_view(url: str, opts: BenchOptions) -> tuple[BenchResult, list[MeasuredLevel]]:
    view = _ServerView(url)
    result = run_bench(BenchTarget.from_url(url), opts, view)
    measured = []
    for level in result.levels:
        delta = view.deltas[level.key]
        measured.append(
            MeasuredLevel(opts.endpoint, level, read_rows(result.run_dir, level), delta)
        )
    return result, measured


def read_rows(run_dir: Path, level: Level) -> list[RequestRow]:
    return RunFolder(run_dir).read_requests(*level.key)


def client_values(rows: list[RequestRow], metric: str) -> list[float]:
    """The client's values of one of the server's latency histograms."""
    ok = [r for r in rows if r.ok]
    if metric == TTFT:
        return [r.ttft_s for r in ok if r.ttft_s is not None]
    if metric == E2E:
        return [r.e2e_s for r in ok if r.e2e_s is not None]
    if metric == ITL:
        return [v for r in ok for v in r.itl_s]
    raise ValueError(metric)


@dataclass(frozen=True)
class QuantileRow:
    q: float
    client_s: float
    server_s: float
    server_bucket: tuple[float, float]

    @property
    def overhead_s(self) -> float:
        """How much later the client saw it than the server (negative: earlier)."""
        return self.client_s - self.server_s


@dataclass(frozen=True)
class Comparison:
    metric: str
    client_count: int
    server: Histogram
    client_fractions: list[float]
    quantiles: list[QuantileRow]

    @property
    def max_fraction_gap(self) -> float:
        """The largest difference of cumulative shares at any of the server's bounds."""
        return max(
            abs(c - s) for c, s in zip(self.client_fractions, self.server.fractions(), strict=True)
        )


def compare(rows: list[RequestRow], server: Snapshot, metric: str) -> Comparison:
    values = client_values(rows, metric)
    hist = server.histogram(metric)
    quantiles = [
        QuantileRow(q, quantile(values, q), hist.quantile(q), hist.bucket_of_quantile(q))
        for q in QUANTILES
    ]
    return Comparison(metric, len(values), hist, client_fractions(values, hist.bounds), quantiles)
