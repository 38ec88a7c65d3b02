"""The streaming client against the simulator's real behaviour: stalls, SSE framing."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from repro.bench.client.stream import StreamClient, measure
from repro.bench.client.wire import SSEParser, generate_body
from tests.support.simulator import Sim, Simulators

REPO = Path(__file__).resolve().parents[2]


def _stalling_profile(tmp: Path) -> Path:
    """Prefill in 1 ms, then a decode step of ten minutes: the stream stalls after token 1."""
    profile = json.loads((REPO / "src/repro/sim/profiles/instant.json").read_text())
    profile["name"] = "stall"
    profile["timing"] = {**profile["timing"], "prefill_fixed_ms": 1.0, "decode_fixed_ms": 600_000}
    path = tmp / "stall.json"
    path.write_text(json.dumps(profile))
    return path


def test_a_stalled_stream_hits_the_read_timeout(simulator: Simulators, tmp_path: Path) -> None:
    server = simulator.tiny("--skip-server-warmup", profile=str(_stalling_profile(tmp_path)))
    body = generate_body("hello there", 8, temperature=0.0, ignore_eos=True)

    async def go() -> tuple[float, list]:
        async with StreamClient(server.url, read_timeout=0.5) as client:
            t = time.perf_counter()
            run = await client.run([body, body], 2)
            return time.perf_counter() - t, run.results

    try:  # the stalled step lasts ten minutes: ending at all shows the read timeout cut it
        elapsed, results = measure(asyncio.wait_for(go(), 60))
    finally:
        server.kill()  # SIGTERM waits for the ten-minute step to end
        server.stop()
    for r in results:
        assert not r.ok and r.error_kind == "timeout", r
        assert "read timeout (0.5 s)" in str(r.error)
        assert r.ttft_s is not None and r.completion_tokens == 1  # the prefill token came
    assert elapsed >= 0.5  # not before the read timeout


def test_a_fast_stream_is_not_cut_by_a_short_or_no_read_timeout(sim_plain: Sim) -> None:
    body = generate_body("hello there", 32, temperature=0.0, ignore_eos=True)

    async def go(timeout: float) -> list:
        async with StreamClient(sim_plain.url, read_timeout=timeout) as client:
            return (await client.run([body] * 4, 4)).results

    for timeout in (0.3, 0.0):
        results = measure(go(timeout))
        assert all(r.ok and r.completion_tokens == 32 for r in results), results


def _wall_minus_perf() -> float:
    """time.time() - time.perf_counter(), from the tightest of several readings: one reading
    taken across a preemption on a busy machine can be off by more than the test's slack."""
    readings = []
    for _ in range(50):
        before = time.perf_counter()
        wall = time.time()
        after = time.perf_counter()
        readings.append((after - before, wall - (before + after) / 2))
    return min(readings)[1]


def test_each_request_s_ttft_spans_the_server_s(simulator: Simulators, tmp_path: Path) -> None:
    """In a burst, each request's clock starts when its bytes leave (not before the client's
    work on the rest of the burst), and its first token comes after the server received it.
    How close the two clocks are is benchmarks/bench_client.py's business."""
    trace = tmp_path / "trace.jsonl"
    server = simulator.tiny(REPRO_SIM_TRACE_FILE=str(trace))
    n = 128
    bodies = [
        generate_body("a burst", 4, temperature=0.0, ignore_eos=True)[:-1] + b',"rid":"b%d"}' % i
        for i in range(n)
    ]

    async def go() -> tuple[float, list]:
        async with StreamClient(server.url) as client:
            await client.run(bodies[:8], 8)  # open some connections, as a warmup would
            offset = _wall_minus_perf()  # the simulator stamps with time.time()
            run = await client.run(bodies, n)
            return offset + run.t0, run.results

    try:
        t0, results = measure(go())
    finally:
        server.stop()
    records = {}
    for line in trace.read_text().splitlines():
        record = json.loads(line)
        records[record["rid"]] = record  # the burst comes last: last line wins
    slack = 1e-3  # the two clocks, and a first chunk read before the server stamped it
    for i, r in enumerate(results):
        assert r.ok and r.ttft_s is not None, r
        record = records[f"b{i}"]
        start = t0 + r.start_s
        assert start <= record["received"] + slack
        # The server stamps a chunk once it has written it and comes back for the next (up to
        # tens of ms late with 128 streams on a busy machine), so only the order is sound here.
        assert start + r.ttft_s >= record["received"]


_EVENTS = st.lists(
    st.tuples(
        st.binary(min_size=1, max_size=40).filter(lambda b: b"\n" not in b and b"\r" not in b),
        st.sampled_from([b"data:", b"data: ", b"data:  "]),
        st.sampled_from([b"\n\n", b"\r\n\r\n"]),
        st.booleans(),  # a comment line before the event
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(events=_EVENTS, cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=6))
def test_sse_payloads_do_not_depend_on_how_reads_split_the_stream(
    events: list[tuple[bytes, bytes, bytes, bool]], cuts: list[int]
) -> None:
    stream = b"".join(
        (b": keep-alive" + nl[: len(nl) // 2] if comment else b"") + field + payload + nl
        for payload, field, nl, comment in events
    )
    expected = [payload.lstrip(b" ") for payload, _, _, _ in events]
    bounds = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    parser = SSEParser()
    got: list[bytes] = []
    for a, b in itertools.pairwise(bounds):
        got += parser.feed(stream[a:b])
    assert got == expected
    assert parser.pending == b""
