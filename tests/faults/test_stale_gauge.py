"""The running-requests verdict holds on a loaded host: a `/metrics` gauge the scrapes never
saw refreshed (a frozen page, as when a busy host delays every scrape past SGLang's
refreshes) is unknown and never judges a level "ran at most 0 requests"; nor does a new
`gen_throughput` beside 0 running (SGLang's prefill log rewrote the running gauge after the
decode step set it, as every scrape of a loaded round found at c=1). A gauge seen refreshing
that shows too few running still judges the level."""

from __future__ import annotations

import itertools
from pathlib import Path

from aiohttp import web
from click.testing import CliRunner

from repro.cli import main
from repro.report.records import load_run
from repro.schema.level import Level
from tests.bench.chunkserver import chunk_server

# 8 requests x 128 tokens at c=4: 256 decode steps, six refreshes at SGLang's default
# decode_log_interval of 40: long enough for the gauge rule to judge
PLAN = ["--concurrency", "4", "--prompts", "8", "--input-len", "8", "--output-len", "128",
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


def test_a_refresh_rewritten_by_a_prefill_is_unknown_not_zero(tmp_path: Path) -> None:
    refresh = itertools.count(1)

    async def after_prefill(request: web.Request) -> web.Response:
        return web.Response(text=_page(0, 100.0 + next(refresh)))

    with chunk_server({"/metrics": after_prefill}) as url:
        level = _bench(url, tmp_path / "run")
    assert level.server is not None and level.server.decode_refreshes == 0
    assert not any("ran at most" in reason for reason in level.reasons), level.reasons


def test_a_gauge_seen_refreshing_still_judges_the_load(tmp_path: Path) -> None:
    refresh = itertools.count(1)

    async def capped_at_one(request: web.Request) -> web.Response:
        return web.Response(text=_page(1, 100.0 + next(refresh)))

    with chunk_server({"/metrics": capped_at_one}) as url:
        level = _bench(url, tmp_path / "run")
    assert level.server is not None and (level.server.decode_refreshes or 0) >= 2
    assert any("ran at most 1 requests while 4 were offered" in r for r in level.reasons)
