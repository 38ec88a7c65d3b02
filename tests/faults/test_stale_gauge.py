"""The running-requests verdict holds on a loaded host: a `/metrics` gauge the scrapes never
saw refreshed (a frozen page, as when a busy host delays every scrape past SGLang's
refreshes) is unknown and never judges a level "ran at most 0 requests"; a gauge seen
refreshing that shows too few running still does."""

from __future__ import annotations

import itertools
from pathlib import Path

from aiohttp import web
from click.testing import CliRunner

from repro.cli import main
from repro.report.records import load_run
from repro.schema.level import Level
from tests.bench.chunkserver import chunk_server

# 4 requests x 128 tokens at c=2: 256 decode steps, six refreshes at SGLang's default
# decode_log_interval of 40: long enough for the gauge rule to judge
PLAN = ["--concurrency", "2", "--prompts", "4", "--input-len", "8", "--output-len", "128",
        "--metrics-interval", "0.02"]  # fmt: skip


def _page(running: float, gen_throughput: float) -> str:
    return (
        f"sglang:num_running_reqs {running}\nsglang:num_queue_reqs 0\n"
        f"sglang:gen_throughput {gen_throughput}\n"
    )


def _bench(url: str, out: Path) -> Level:
    result = CliRunner().invoke(main, ["bench", "--url", url, *PLAN, "--output", str(out)])
    assert result.exit_code == 0, result.output
    [level] = load_run(out).levels
    assert level.server is not None and level.server.samples >= 5, level.server
    return level


def test_a_gauge_never_seen_refreshed_is_unknown_not_zero(tmp_path: Path) -> None:
    async def frozen(request: web.Request) -> web.Response:
        return web.Response(text=_page(0, 0))  # set before the level, never again

    with chunk_server({"/metrics": frozen}) as url:
        level = _bench(url, tmp_path / "run")
    assert level.server is not None and level.server.decode_refreshes == 0
    assert not any("ran at most" in reason for reason in level.reasons), level.reasons


def test_a_gauge_seen_refreshing_still_judges_the_load(tmp_path: Path) -> None:
    refresh = itertools.count(1)

    async def refreshed_idle(request: web.Request) -> web.Response:
        return web.Response(text=_page(0, 100.0 + next(refresh)))

    with chunk_server({"/metrics": refreshed_idle}) as url:
        level = _bench(url, tmp_path / "run")
    assert level.server is not None and (level.server.decode_refreshes or 0) >= 2
    assert any("ran at most 0 requests while 2 were offered" in r for r in level.reasons)
