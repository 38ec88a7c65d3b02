"""The stream reader (HTTP framing, SSE, the /generate and chat readers) fed any bytes: a
response ends as a status or as one of the errors the client records as a failed request,
never as another exception, and an SSE event never grows past its limit."""

from __future__ import annotations

import asyncio
import itertools

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repro.bench.client.http1 import Connection, ProtocolError
from repro.bench.client.readers import (
    Bounds,
    ChatReader,
    GenerateReader,
    Implausible,
    StreamStopped,
)
from repro.bench.client.result import RequestResult
from repro.bench.client.stream import _Live
from repro.bench.client.wire import EventTooLarge, SSEParser
from tests.bench.hostileserver import meta_event, sse, stream
from tests.support.transport import NullTransport

HANDLED = (ProtocolError, EventTooLarge, Implausible, StreamStopped, msgspec.MsgspecError)


def _feed(reads: list[bytes], chat: bool) -> BaseException | int | None:
    """What a Connection with a reader makes of `reads`: the status, the error, or None
    (the response has not ended)."""

    async def go() -> BaseException | int | None:
        conn = Connection()
        conn.connection_made(NullTransport())  # type: ignore[arg-type]
        result = RequestResult(1, 0, 0)
        reader = (ChatReader if chat else GenerateReader)(
            result, 0.0, _Live(None, 0.0), Bounds(max_tokens=16, max_event_bytes=4096)
        )
        _, done = conn.send(b"POST / HTTP/1.1\r\n\r\n", reader.feed)
        for data in reads:
            conn.data_received(data)
            assert len(reader.sse.__self__.pending) <= 4096  # type: ignore[attr-defined]
        if not done.done():
            return None
        return done.exception() or done.result()

    return asyncio.run(go())


def _split(stream: bytes, cuts: list[int]) -> list[bytes]:
    bounds = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
    return [stream[a:b] for a, b in itertools.pairwise(bounds)]


_VALID = stream(
    meta_event(completion_tokens=1),
    meta_event(completion_tokens=2, spec_verify_ct=1),
    sse({"choices": [{"delta": {"content": "ab"}}], "usage": {"completion_tokens": 3}}),
)


@settings(max_examples=300, deadline=None)
@given(
    flips=st.lists(st.tuples(st.integers(0, len(_VALID) - 1), st.integers(0, 255)), max_size=6),
    cuts=st.lists(st.integers(0, 4000), max_size=6),
    chat=st.booleans(),
)
def test_a_mutated_stream_ends_as_a_status_or_a_recorded_error(
    flips: list[tuple[int, int]], cuts: list[int], chat: bool
) -> None:
    data = bytearray(_VALID)
    for at, byte in flips:
        data[at] = byte
    outcome = _feed(_split(bytes(data), cuts), chat)
    assert outcome is None or isinstance(outcome, (int, *HANDLED)), repr(outcome)


@settings(max_examples=200, deadline=None)
@given(noise=st.binary(max_size=600), cuts=st.lists(st.integers(0, 700), max_size=6))
def test_any_bytes_end_as_a_status_or_a_recorded_error(noise: bytes, cuts: list[int]) -> None:
    for prefix in (b"", b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"):
        outcome = _feed(_split(prefix + noise, cuts), chat=False)
        assert outcome is None or isinstance(outcome, (int, *HANDLED)), repr(outcome)


@settings(max_examples=100, deadline=None)
@given(
    size=st.integers(1025, 20_000),
    cuts=st.lists(st.integers(0, 20_000), max_size=10),
    crlf=st.booleans(),
)
def test_an_event_over_the_limit_raises_however_reads_split_it(
    size: int, cuts: list[int], crlf: bool
) -> None:
    parser = SSEParser(max_event_bytes=1024)
    data = b"data: " + b"x" * size + (b"\r\n\r\n" if crlf else b"\n\n")
    with pytest.raises(EventTooLarge, match="limit 1024"):
        for part in _split(data, cuts):
            parser.feed(part)
            assert len(parser.pending) <= 1024
    assert parser.pending == b""
    assert parser.feed(b"data: next\n\n") == [b"next"]  # the parser is usable again
