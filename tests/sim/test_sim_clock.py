"""The simulator's own clock and its periodic gauges: SGLang refreshes num_running_reqs and
gen_throughput at prefill batches and every --decode-log-interval decode steps, and the
simulator reports when the host made it fall behind its schedule."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.simulator import Simulators

from .simproc import MODEL, get_json

PROFILE = {
    "name": "gauges",
    "assumptions": "test profile: 20 ms per decode step",
    "model": {"context_length": 8192, "eos_token_id": 2},
    "timing": {"prefill_fixed_ms": 2.0, "decode_fixed_ms": 20.0, "max_running_requests": 16},
}
REQUESTS, TOKENS = 4, 60


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gauges") / "gauges.json"
    path.write_text(json.dumps(PROFILE))
    return path


def _gauges(text: str) -> dict[str, float]:
    wanted = ("sglang:num_running_reqs", "sglang:gen_throughput")
    return {
        f.name: f.samples[0].value
        for f in text_string_to_metric_families(text)
        if f.name in wanted and f.samples
    }


async def _load_and_watch(url: str, requests: int, tokens: int) -> list[dict[str, float]]:
    """The running and throughput gauges scraped while `requests` streams run at once."""
    body = {"sampling_params": {"max_new_tokens": tokens, "ignore_eos": True}, "stream": True}
    seen: list[dict[str, float]] = []
    async with aiohttp.ClientSession() as session:

        async def one(i: int) -> None:
            async with session.post(url + "/generate", json={**body, "text": f"r{i}"}) as r:
                async for _ in r.content:
                    pass

        async def watch() -> None:
            while True:
                async with session.get(url + "/metrics") as r:
                    seen.append(_gauges(await r.text()))
                await asyncio.sleep(0.01)

        watcher = asyncio.ensure_future(watch())
        await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(requests))), 60)
        watcher.cancel()
    return seen


@pytest.mark.parametrize("interval", [5, 1000])
def test_gauges_refresh_every_decode_log_interval(
    simulator: Simulators, profile: Path, interval: int
) -> None:
    env = {"REPRO_SIM_PROFILE": str(profile), "REPRO_SIM_TIME_SCALE": "0.3"}
    args = ["--model-path", MODEL, "--enable-metrics", "--decode-log-interval", str(interval)]
    sim = simulator(args, env)
    seen = asyncio.run(_load_and_watch(sim.url, REQUESTS, TOKENS))
    running = max(s["sglang:num_running_reqs"] for s in seen)
    rate = max(s["sglang:gen_throughput"] for s in seen)
    if interval == 5:  # 60 decode steps: a report every 5 shows the whole batch running
        assert running == REQUESTS and rate > 0
    else:  # no decode report in 60 steps: only the prefill batches' (running before them)
        assert running < REQUESTS and rate == 0
    idle = get_json(sim.url + "/repro_sim/clock")
    assert idle["simulated"] is True and idle["steps"] >= TOKENS


def test_a_host_that_cannot_keep_the_scale_is_reported(simulator: Simulators) -> None:
    # demo steps are ~8 ms; at time-scale 0.0005 a step is 4 us, far less than emitting it
    sim = simulator(["--model-path", MODEL], {"REPRO_SIM_TIME_SCALE": "0.0005"})
    info = get_json(sim.url + "/server_info")
    assert info["sim_clock"]["min_time_scale"] > 0.0005
    assert "time-scale 0.0005 is below" in sim.log()
    before = get_json(sim.url + "/repro_sim/clock")
    asyncio.run(_load_and_watch_plain(sim.url))
    after = get_json(sim.url + "/repro_sim/clock")
    scheduled = after["scheduled_s"] - before["scheduled_s"]
    behind = after["behind_s"] - before["behind_s"]
    assert scheduled > 0 and behind > scheduled  # the timeline stretched more than it lasted
    assert after["cpu_s"] > before["cpu_s"]


async def _load_and_watch_plain(url: str) -> None:
    body = {"sampling_params": {"max_new_tokens": 64, "ignore_eos": True}}
    async with aiohttp.ClientSession() as session:

        async def one(i: int) -> None:
            async with session.post(url + "/generate", json={**body, "text": f"r{i}"}) as r:
                await r.read()

        await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(48))), 60)
