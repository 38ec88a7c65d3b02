"""How fast and how accurate is repro's streaming client (issue 8, Performance)?

1. Throughput: the simulator (profile `instant`, REPRO_SIM_TIME_SCALE=0: no waiting at all)
   runs in its own process pinned to CPU 1; the client is pinned to CPU 0. For 64, 256 and
   1024 concurrent streams it reports the token-carrying events per second the client parsed
   and its CPU time per event (target: <= 20 us at 256 streams).
2. Accuracy: the simulator (profile `demo`, fixed step times) records when it sent each chunk
   (REPRO_SIM_TRACE_FILE); the client's median ITL and TTFT are compared with the server-side
   median gap and first-chunk time at 256 streams (target: within 0.1 ms for ITL).

    .venv/bin/python benchmarks/bench_client.py [--tokens 64] [--streams 64,256,1024]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))

from repro.bench.client import StreamClient  # noqa: E402
from repro.bench.prompts import bench_prompts  # noqa: E402
from repro.bench.wire import generate_body  # noqa: E402
from tests.bench.simserver import SimServer  # noqa: E402


def _pin(cpu: int) -> None:
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > cpu:
        os.sched_setaffinity(0, {cpu})


def _bodies(n: int, tokens: int) -> list[bytes]:
    prompts = bench_prompts("random", n, 32, seed=n)
    return [generate_body(p, tokens, temperature=0.0, ignore_eos=True) for p in prompts]


async def _run(url: str, bodies: list[bytes], streams: int) -> tuple[float, float, int, list]:
    async with StreamClient(url, "generate", read_timeout=120) as client:
        await client.run(bodies[: min(len(bodies), streams)], streams)  # warm connections
        cpu0, wall0 = time.process_time(), time.perf_counter()
        run = await client.run(bodies, streams)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    events = sum(len(r.itl_s) + 1 for r in run.results if r.ok)
    return cpu, wall, events, run.results


def throughput(streams_list: list[int], tokens: int, tmp: Path) -> None:
    server = SimServer(
        tmp / "instant.log", "--max-running-requests", "4096",
        profile="instant", REPRO_SIM_TIME_SCALE="0",
    )  # fmt: skip
    try:
        if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
            os.sched_setaffinity(server.proc.pid, {1})
        print("streams  requests  events   wall_s  events/s(wall)  client_cpu_s  us/event")
        for streams in streams_list:
            bodies = _bodies(streams * 2, tokens)
            cpu, wall, events, results = asyncio.run(_run(server.url, bodies, streams))
            failed = sum(not r.ok for r in results)
            print(f"{streams:7d}  {len(bodies):8d}  {events:6d}  {wall:7.2f}  {events / wall:14.0f}"
                  f"  {cpu:12.3f}  {cpu / max(events, 1) * 1e6:8.1f}"
                  + (f"  ({failed} failed)" if failed else ""))  # fmt: skip
    finally:
        server.stop()


def accuracy(streams: int, tokens: int, tmp: Path) -> None:
    trace = tmp / "trace.jsonl"
    server = SimServer(
        tmp / "demo.log", "--max-running-requests", str(streams),
        profile="demo", REPRO_SIM_TRACE_FILE=str(trace),
    )  # fmt: skip
    try:
        if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
            os.sched_setaffinity(server.proc.pid, {1})
        trace.write_text("")  # drop the start-up warmup
        bodies = _bodies(streams, tokens)
        _, _, _, results = asyncio.run(_run(server.url, bodies, streams))
    finally:
        server.stop()
    records = [json.loads(line) for line in trace.read_text().splitlines() if line.strip()]
    records = records[-streams:]  # the measured requests (the warm-up batch came first)
    server_gaps = [
        b["t"] - a["t"] for r in records for a, b in zip(r["chunks"], r["chunks"][1:], strict=False)
    ]
    server_ttft = [r["chunks"][0]["t"] - r["received"] for r in records if r["chunks"]]
    ok = [r for r in results if r.ok]
    client_itl = [g for r in ok for g in r.itl_s]
    client_ttft = [r.ttft_s for r in ok if r.ttft_s is not None]
    s_itl, c_itl = np.median(server_gaps) * 1e3, np.median(client_itl) * 1e3
    s_ttft, c_ttft = np.median(server_ttft) * 1e3, np.median(client_ttft) * 1e3
    print(f"accuracy at {streams} streams ({len(ok)} ok requests, {tokens} tokens each):")
    for name, srv, cli in (("ITL ", s_itl, c_itl), ("TTFT", s_ttft, c_ttft)):
        print(f"  median {name}  server {srv:8.3f} ms  client {cli:8.3f} ms  diff {cli - srv:+.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", default="64,256,1024")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--accuracy-streams", type=int, default=256)
    args = parser.parse_args()
    _pin(0)
    with tempfile.TemporaryDirectory() as tmp:
        throughput([int(s) for s in args.streams.split(",")], args.tokens, Path(tmp))
        accuracy(args.accuracy_streams, args.tokens, Path(tmp))


if __name__ == "__main__":
    main()
