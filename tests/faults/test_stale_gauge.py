"""The running-requests verdict holds on a loaded host: a `/metrics` gauge the scrapes never
saw refreshed (a frozen page, as when a busy host delays every scrape past SGLang's
refreshes) is unknown and never judges a level "ran at most 0 requests"; nor does a new
`gen_throughput` beside 0 running (SGLang's prefill log rewrote the running gauge after the
decode step set it, as every scrape of a loaded round found at c=1). A gauge seen refreshing
that shows too few running still judges the level."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from aiohttp import web
from click.testing import CliRunner

from repro.cli import main
from repro.report.records import load_run
from repro.schema.level import Level
from tests.bench.chunkserver import Handler, chunk_server

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


def _metrics(running: float, refreshing: bool) -> dict[str, Handler]:
    """`/metrics` showing `running`, its gen_throughput new at every scrape or frozen."""
    refresh = itertools.count(1)

    async def page(request: web.Request) -> web.Response:
        return web.Response(text=_page(running, 100.0 + next(refresh) if refreshing else 0))

    return {"/metrics": page}


@pytest.mark.parametrize(
    "refreshing",
    [False, True],  # frozen since before the level; new, but rewritten by a prefill's log
    ids=["never-seen-refreshed", "refresh-rewritten-by-a-prefill"],
)
def test_a_stale_gauge_is_unknown_not_zero(tmp_path: Path, refreshing: bool) -> None:
    with chunk_server(_metrics(0, refreshing)) as url:
        level = _bench(url, tmp_path / "run")
    assert level.server is not None and level.server.decode_refreshes == 0
    assert not any("ran at most" in reason for reason in level.reasons), level.reasons


def test_a_gauge_seen_refreshing_still_judges_the_load(tmp_path: Path) -> None:
    with chunk_server(_metrics(1, refreshing=True)) as url:  # capped at one
        level = _bench(url, tmp_path / "run")
    assert level.server is not None and (level.server.decode_refreshes or 0) >= 2
    assert any("ran at most 1 requests while 4 were offered" in r for r in level.reasons)
