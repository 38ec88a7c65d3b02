"""How many concurrent streams and SSE events per second the SGLang simulator sustains.

Starts `python -m sglang.launch_server` (the simulator, through its shim) on a free port with
the zero-step-time `instant` profile by default, so the numbers are the simulator's own CPU
cost plus this client's, then opens N concurrent /generate streams and prints what it saw:

    .venv/bin/python benchmarks/sim_throughput.py --streams 1000 --tokens 64
    .venv/bin/python benchmarks/sim_throughput.py --server-cpus 0   # pin the server to core 0

Standard library + aiohttp only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import aiohttp

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
SHIM = SRC / "repro" / "sim" / "shim"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(profile: str, incremental: bool, cpus: str | None) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": f"{SHIM}{os.pathsep}{SRC}", "REPRO_SIM_PROFILE": profile}
    argv = [sys.executable, "-m", "sglang.launch_server", "--model-path", "bench/model"]
    argv += ["--host", "127.0.0.1", "--port", str(port)]
    if incremental:
        argv.append("--incremental-streaming-output")
    if cpus is not None:
        argv = ["taskset", "-c", cpus, *argv]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/health_generate", timeout=2) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("the simulator did not become ready")


async def run(url: str, streams: int, tokens: int) -> dict[str, float]:
    body = {"stream": True, "sampling_params": {"max_new_tokens": tokens, "ignore_eos": True}}
    connector = aiohttp.TCPConnector(limit=0)
    first: list[float] = []
    events = 0
    total_tokens = 0
    async with aiohttp.ClientSession(
        connector=connector, timeout=aiohttp.ClientTimeout(total=600)
    ) as session:

        async def one(i: int) -> None:
            nonlocal events, total_tokens
            sent = time.perf_counter()
            async with session.post(url + "/generate", json={**body, "text": f"stream {i}"}) as r:
                last = b""
                async for line in r.content:
                    if line.startswith(b"data: {"):
                        if not last:
                            first.append(time.perf_counter() - sent)
                        events += 1
                        last = line
                total_tokens += len(json.loads(last[6:])["output_ids"]) if last else 0

        start = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(streams)))
        elapsed = time.perf_counter() - start
    first.sort()
    return {
        "streams": streams,
        "tokens_per_stream": tokens,
        "seconds": round(elapsed, 3),
        "events": events,
        "events_per_s": round(events / elapsed, 1),
        "tokens_per_s": round(streams * tokens / elapsed, 1),
        "ttft_p50_s": round(first[len(first) // 2], 4),
        "ttft_p99_s": round(first[int(len(first) * 0.99) - 1], 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--tokens", type=int, default=64, help="tokens per stream")
    parser.add_argument("--profile", default="instant")
    parser.add_argument("--incremental", action="store_true", help="deltas, not cumulative")
    parser.add_argument("--server-cpus", help="taskset CPU list for the server, e.g. 0")
    args = parser.parse_args()
    proc, url = start_server(args.profile, args.incremental, args.server_cpus)
    try:
        result = asyncio.run(run(url, args.streams, args.tokens))
    finally:
        proc.terminate()
        proc.wait(30)
    result["profile"] = args.profile
    result["mode"] = "incremental" if args.incremental else "cumulative"
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
