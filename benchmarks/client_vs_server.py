"""How much of a measured latency is the client's? repro's timings against SGLang's own (issue 30).

Starts SGLang 0.5.23's own CPU engine (`.venv-sglang/`, `make sglang-engine`) on the seeded
tiny Qwen3, runs `repro bench`'s sweep against it (what `repro bench --url` runs) and takes
the server's `/metrics` right before and after each level's measured requests. For TTFT,
ITL (per token) and E2E it prints, on the server's own bucket bounds, the cumulative share of
the client's values beside the server's histogram (bucket-level agreement; the largest gap),
then per quantile the client's value, the server's (Prometheus' `histogram_quantile`,
linear within a bucket, so only as exact as the buckets are narrow) and the client's
overhead. `--url` measures a server already running instead.

    .venv/bin/python benchmarks/client_vs_server.py [--endpoint generate|chat]
        [--concurrency 1,4] [--prompts 32] [--input-len 64] [--output-len 64] [--url URL]

Output of a run is kept in benchmarks/client_vs_server.txt.
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from repro.bench import BenchOptions
from repro.realengine.clientserver import MeasuredLevel, bench_with_server_view, compare
from repro.realengine.engine import make_tiny_model, running_engine
from repro.realengine.servermetrics import E2E, GENERATION_TOKENS, ITL, TTFT


@contextlib.contextmanager
def _server(url: str | None, work: Path) -> Iterator[str]:
    if url:
        yield url
        return
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = make_tiny_model(work / "qwen3-tiny")
    with running_engine(model, port, work / "engine.log") as engine:
        yield engine.url


def _report(measured: MeasuredLevel) -> None:
    level = measured.level
    print(
        f"\n== {measured.endpoint} c={level.concurrency}: {level.completed} requests, "
        f"{level.total_output_tokens} output tokens (server counted "
        f"{measured.server.counters.get(GENERATION_TOKENS, float('nan')):g}); "
        f"valid={level.valid} {level.reasons or ''}"
    )
    for metric in (TTFT, ITL, E2E):
        c = compare(measured.rows, measured.server, metric)
        print(f"-- {metric}: client {c.client_count} values, server {c.server.count:g}")
        print(f"   {'le (ms)':>10} {'client':>8} {'server':>8}")
        lower_seen = False
        for bound, cf, sf in zip(
            c.server.bounds, c.client_fractions, c.server.fractions(), strict=True
        ):
            if cf == 0 and sf == 0 and not lower_seen:
                continue  # the empty buckets below the first observation
            lower_seen = True
            print(f"   {bound * 1000:>10.1f} {cf:>8.3f} {sf:>8.3f}")
            if cf == 1 and sf == 1:
                break
        print(f"   largest gap of cumulative shares: {c.max_fraction_gap:.3f}")
        print(f"   {'q':>5} {'client ms':>10} {'server ms':>10} {'overhead ms':>12}  server bucket")
        for q in c.quantiles:
            low, high = q.server_bucket
            print(
                f"   {q.q:>5} {q.client_s * 1000:>10.2f} {q.server_s * 1000:>10.2f} "
                f"{q.overhead_s * 1000:>12.2f}  ({low * 1000:g}, {high * 1000:g}] ms"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", choices=["generate", "chat"], default="generate")
    parser.add_argument("--concurrency", default="1,4")
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--input-len", type=int, default=64)
    parser.add_argument("--output-len", type=int, default=64)
    parser.add_argument("--url", help="a running SGLang server with --enable-metrics")
    args = parser.parse_args()
    print(f"machine: {platform.node()} {platform.machine()}, python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="client-vs-server-") as tmp:
        work = Path(tmp)
        with _server(args.url, work) as url:
            opts = BenchOptions(
                url=url,
                concurrencies=[int(c) for c in args.concurrency.split(",")],
                input_len=args.input_len,
                output_len=args.output_len,
                prompts=args.prompts,
                endpoint=args.endpoint,
                runs_dir=work / "runs",
            )
            _, levels = bench_with_server_view(url, opts)
            print(f"server: {url}; {args.prompts} prompts x {args.output_len} tokens a level")
            for measured in levels:
                _report(measured)


if __name__ == "__main__":
    main()
