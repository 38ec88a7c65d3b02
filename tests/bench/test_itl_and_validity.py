"""Per-token ITL against a server with known chunks; the validity verdict of a level."""

from __future__ import annotations

from typing import Any

import pytest

from repro.bench import StreamClient, summarize_level
from repro.bench.client.stream import measure
from repro.bench.client.wire import chat_body, generate_body
from repro.bench.metrics import request_row
from repro.bench.validity import judge
from repro.schema.level import Level
from repro.schema.server import ServerLimits, ServerState
from tests.bench.chunkserver import chunk_server


@pytest.mark.parametrize("endpoint", ["generate", "chat"])
def test_itl_is_per_token_and_chunk_gaps_per_chunk(endpoint: Any) -> None:
    """4 tokens per chunk every 10 ms: bench_serving's ITL reads 2.5 ms, the chunk gap 10."""
    if endpoint == "chat":
        body = chat_body("m", [{"role": "user", "content": "hi"}], 64, temperature=0.0,
                         ignore_eos=True)  # fmt: skip
    else:
        body = generate_body("hi", 64, temperature=0.0, ignore_eos=True)

    async def go(url: str) -> Any:
        async with StreamClient(url, endpoint) as client:
            return await client.run([body] * 4, 2)

    with chunk_server() as url:
        run = measure(go(url))
    assert all(r.ok and r.completion_tokens == 64 for r in run.results), run.results
    level = summarize_level(run.results, concurrency=2, repeat=0, duration=run.duration)
    assert level.median_itl_ms == pytest.approx(2.5, abs=0.5)
    assert level.median_chunk_gap_ms == pytest.approx(10.0, abs=2.0)
    assert level.median_tpot_ms == pytest.approx(150 / 63, rel=0.2)  # 15 gaps over 63 tokens
    row = request_row(run.results[0])
    assert row.chunk_tokens == [4] * 15 and len(row.chunk_gap_s) == 15
    assert len(row.itl_s) == 60 and row.itl_s[:4] == [row.chunk_gap_s[0] / 4] * 4


def _level(**kw: Any) -> Level:
    base: dict[str, Any] = dict(
        concurrency=64, completed=100, failed=0, duration=10.0, request_throughput=10.0,
        output_throughput=1000.0, total_output_tokens=10000,
    )  # fmt: skip
    base.update(kw)
    return Level.model_validate(base)


def _server(cap: int | None = 256, **kw: Any) -> ServerState:
    return ServerState(
        limits=ServerLimits(max_running_requests=cap), metrics_available=True, samples=20,
        decode_refreshes=10, **kw,
    )  # fmt: skip


def test_chunks_read_together_are_counted_as_merged() -> None:
    """A front end that fell behind sends two events per write: the second of each pair comes
    off the socket with the first, a gap of 0, and the level says what share that was."""

    body = generate_body("hi", 64, temperature=0.0, ignore_eos=True)

    async def go(url: str) -> Any:
        async with StreamClient(url, "generate") as client:
            return await client.run([body] * 2, 1)

    with chunk_server(events_per_write=2) as url:
        run = measure(go(url))
    assert all(r.ok and r.completion_tokens == 64 for r in run.results), run.results
    level = summarize_level(run.results, concurrency=1, repeat=0, duration=run.duration)
    # 16 events: the first is the TTFT, and 8 of the 15 gaps are the second of a pair
    assert level.merged_chunk_pct is not None and level.merged_chunk_pct >= 8 / 15 * 100
    assert level.median_itl_ms == 0.0


def test_a_sound_level_is_valid() -> None:
    level = _level(accept_length=4.0, client_cpu_per_s=0.3,
                   server=_server(max_running=60.0, spec_accept_length=4.2))  # fmt: skip
    assert judge(level, offered=64, max_failed_pct=1.0) == []


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"total_output_tokens": 0, "output_throughput": 0.0}, "no output tokens"),
        ({"completed": 97, "failed": 3}, "3 of 100 requests failed (3.0% > 1%)"),
        ({"server": _server(48, max_running=48.0)}, "above the server's max_running_requests 48"),
        ({"server": _server(max_running=10.0)}, "ran at most 10 requests while 64 were offered"),
        ({"accept_length": 2.0, "server": _server(spec_accept_length=4.0)},
         "acceptance 2.00 (pooled, from the requests) disagrees"),
        ({"client_cpu_per_s": 0.97}, "the client used 0.97 CPU s per s"),
    ],
)  # fmt: skip
def test_each_check_names_its_reason(change: dict[str, Any], reason: str) -> None:
    (got,) = judge(_level(**change), offered=64, max_failed_pct=1.0)
    assert reason in got


def test_few_samples_and_open_loop_skip_the_running_check() -> None:
    few = _level(server=_server(max_running=1.0).model_copy(update={"samples": 2}))
    assert judge(few, offered=64, max_failed_pct=1.0) == []
    assert judge(_level(server=_server(max_running=1.0)), offered=None, max_failed_pct=1.0) == []


def test_a_level_too_short_for_a_gauge_refresh_is_not_judged_by_the_stale_gauge() -> None:
    # SGLang refreshes num_running_reqs every decode_log_interval decode iterations: 6
    # requests x 24 tokens at c=2 is 72 iterations, one refresh at most (the real engine's
    # gauge read 0 there); the same zero over a level of 40 refreshes means it never ran.
    stale = _server(max_running=0.0)
    stale.limits = ServerLimits(max_running_requests=256, decode_log_interval=40)
    short = _level(concurrency=2, completed=6, total_output_tokens=144, server=stale)
    long = _level(concurrency=2, completed=6, total_output_tokens=3200, server=stale)
    assert judge(short, offered=2, max_failed_pct=1.0) == []
    (reason,) = judge(long, offered=2, max_failed_pct=1.0)
    assert "ran at most 0 requests while 2 were offered" in reason
    every_step = stale.model_copy(update={"limits": ServerLimits(decode_log_interval=1)})
    (reason,) = judge(_level(**{**short.model_dump(), "server": every_step}), offered=2,
                      max_failed_pct=1.0)  # fmt: skip
    assert "ran at most 0" in reason
