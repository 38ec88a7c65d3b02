"""Stopping the `/metrics` scraper always ends it. A cancel that met a scrape's reply as it
landed was lost (Python 3.11's `asyncio.wait_for` returns the finished result instead), the
scraper went on, and the bench waited for it for ever: a loaded round hung 600 s in
tests/faults/test_stale_gauge.py and a level on SGLang's engine past its 900 s. Stopped many
times in the middle of back-to-back scrapes, it ends every time, within a deadline."""

from __future__ import annotations

import asyncio
import random

from aiohttp import web

from repro.bench.serverstate import MetricsScraper
from repro.bench.session import ServerSession
from tests.bench.chunkserver import chunk_server

ROUNDS = 400


async def _page(request: web.Request) -> web.Response:
    return web.Response(text="sglang:num_running_reqs 1\nsglang:gen_throughput 5\n")


def test_a_scraper_stopped_as_a_reply_lands_still_stops() -> None:
    with chunk_server({"/metrics": _page}) as url:
        session = ServerSession(url)

        async def rounds() -> int:
            stopped = 0
            for index in range(ROUNDS):
                scraper = MetricsScraper(session, interval=0.0)
                scraper.start()
                # land the stop at another point of a scrape each time
                await asyncio.sleep(random.Random(index).uniform(0, 0.003))
                async with asyncio.timeout(10):
                    await scraper.stop()
                stopped += 1
            return stopped

        assert session.call(rounds()) == ROUNDS
