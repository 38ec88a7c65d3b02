"""The timing model: throughput rises with concurrency, then saturates; seeds; the trace."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.support.simulator import Simulators

from .simproc import MODEL, post_json

# 20 ms per step + 1 ms per running request, at most 16 running: tokens/s = n / (20 + n) ms
PROFILE = {
    "name": "scaling",
    "assumptions": "test profile",
    "model": {"context_length": 8192, "eos_token_id": 2},
    "timing": {
        "prefill_fixed_ms": 2.0,
        "decode_fixed_ms": 20.0,
        "decode_per_req_ms": 1.0,
        "max_running_requests": 16,
        "kv_tokens": 1000000,
    },
}
SCALE = 0.3
TOKENS = 24


@pytest.fixture(scope="module")
def scaling(simulator: Simulators, tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("scaling")
    profile = root / "scaling.json"
    profile.write_text(json.dumps(PROFILE))
    env = {
        "REPRO_SIM_PROFILE": str(profile),
        "REPRO_SIM_TIME_SCALE": str(SCALE),
        "REPRO_SIM_SEED": "7",
        "REPRO_SIM_TRACE_FILE": str(root / "trace.jsonl"),
    }
    sim = simulator(["--model-path", MODEL, "--enable-metrics"], env)
    sim.trace = root / "trace.jsonl"
    return sim


async def _scheduled_s(session: aiohttp.ClientSession, url: str) -> float:
    async with session.get(url + "/repro_sim/clock") as r:
        return float((await r.json())["scheduled_s"])


async def _level(url: str, concurrency: int) -> tuple[float, int]:
    """The seconds the simulator's clock scheduled for `concurrency` requests sent at once
    (its own timeline: this host's load does not stretch it), and the most queued requests
    seen."""
    body = {"sampling_params": {"max_new_tokens": TOKENS, "ignore_eos": True}}
    most_queued = 0
    async with aiohttp.ClientSession() as session:

        async def one(i: int) -> int:
            async with session.post(url + "/generate", json={**body, "text": f"req {i}"}) as r:
                return int((await r.json())["meta_info"]["completion_tokens"])

        async def watch() -> None:
            nonlocal most_queued
            while True:
                async with session.get(url + "/metrics") as r:
                    for line in (await r.text()).splitlines():
                        if line.startswith("sglang:num_queue_reqs{"):
                            most_queued = max(most_queued, int(float(line.split()[-1])))
                await asyncio.sleep(0.02)

        watcher = asyncio.ensure_future(watch())
        start = await _scheduled_s(session, url)
        tokens = await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(concurrency))), 60)
        scheduled = await _scheduled_s(session, url) - start
        watcher.cancel()
    assert tokens == [TOKENS] * concurrency
    return scheduled, most_queued


def test_throughput_rises_then_saturates(scaling: Any) -> None:
    throughput, queued = {}, {}
    for n in (1, 4, 16, 48):
        scheduled, queued[n] = asyncio.run(_level(scaling.url, n))
        throughput[n] = n * TOKENS / scheduled
    # model: 1/(21 ms), 4/(24 ms), 16/(36 ms), then capped at 16 running
    print({n: round(t) for n, t in throughput.items()})
    assert throughput[4] > 2.0 * throughput[1]
    assert throughput[16] > 1.5 * throughput[4]
    assert 0.7 < throughput[48] / throughput[16] < 1.3
    assert queued[48] > 0 and queued[1] == 0
    single = TOKENS / (TOKENS * 21e-3 * SCALE)
    assert 0.5 * single < throughput[1] < 1.2 * single


def test_seed_changes_text_and_is_stable(scaling: Any, sim: Any) -> None:
    body = {
        "text": "Describe a sunset.",
        "sampling_params": {"max_new_tokens": 12, "ignore_eos": True},
    }
    _, a = post_json(scaling.url + "/generate", body)
    _, b = post_json(scaling.url + "/generate", body)
    _, other_seed = post_json(sim.url + "/generate", body)
    assert a["output_ids"] == b["output_ids"] and a["text"] == b["text"]
    assert a["output_ids"] != other_seed["output_ids"]


def test_trace_file_records_chunk_send_times(scaling: Any) -> None:
    body = {
        "text": "trace me",
        "stream": True,
        "sampling_params": {"max_new_tokens": 6, "ignore_eos": True},
    }

    async def stream() -> int:
        async with (
            aiohttp.ClientSession() as session,
            session.post(scaling.url + "/generate", json=body) as r,
        ):
            return len([line async for line in r.content if line.startswith(b"data: {")])

    assert asyncio.run(stream()) == 6
    deadline = time.monotonic() + 5
    record = None
    while record is None and time.monotonic() < deadline:
        lines = Path(scaling.trace).read_text().splitlines()
        records = [json.loads(line) for line in lines]
        record = next((r for r in records if r["stream"] and r["completion_tokens"] == 6), None)
        time.sleep(0.02)
    assert record is not None and record["endpoint"] == "/generate"
    chunks = record["chunks"]
    assert sum(c["tokens"] for c in chunks) == 6 and len(chunks) == 6
    times = [c["t"] for c in chunks]
    assert times == sorted(times) and times[0] >= record["received"]
