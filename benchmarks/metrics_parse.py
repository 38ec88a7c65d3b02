"""How much CPU does one `/metrics` page cost the bench client (issue 43, item 2)?

A page shaped like SGLang's (mostly histogram buckets, a few gauges; `--series` lines in all)
goes through `repro.bench.serverstate.parse_metrics`, which picks the gauge lines out by name
before prometheus_client parses them. It prints the best of `--repeats` parse CPU times
(time.process_time: less noisy than wall time on a shared machine) and the CPU per MB. The
scraper reads at most `repro.bench.session.METRICS.max_bytes` of a page and parses it in a
worker thread, off the event loop that stamps token arrival times.

    .venv/bin/python benchmarks/metrics_parse.py [--series 1000000] [--repeats 5]

Measured on the shared 2-core dev box (Dec 2026, load ~5): 1,000,002 series (73.8 MB) in
~139 ms of CPU, where the earlier line-by-line filter took ~282 ms; a page at the 8 MiB
bound ~16 ms.
"""

from __future__ import annotations

import argparse
import time

from repro.bench.serverstate import parse_metrics
from repro.bench.session import METRICS


def page(series: int) -> bytes:
    lines = [
        f'sglang:e2e_request_latency_seconds_bucket{{le="{i}",tp_rank="{i % 8}"}} {i}'
        for i in range(series)
    ]
    lines += ['sglang:num_running_reqs{tp_rank="0"} 3', 'sglang:num_queue_reqs{tp_rank="0"} 1']
    return ("\n".join(lines) + "\n").encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    data = page(args.series)
    best = float("inf")
    for _ in range(args.repeats):
        start = time.process_time()
        sample = parse_metrics(data, 0.0)
        best = min(best, time.process_time() - start)
    mb = len(data) / 1e6
    per_mb = best / mb
    bound_mb = METRICS.max_bytes / 1e6
    print(f"{args.series + 2} series, {mb:.1f} MB: {best * 1000:.0f} ms CPU")
    print(f"{per_mb * 1000:.2f} ms/MB; a page at the bound: ~{per_mb * bound_mb * 1000:.0f} ms")
    assert sample.num_running_reqs == 3.0


if __name__ == "__main__":
    main()
