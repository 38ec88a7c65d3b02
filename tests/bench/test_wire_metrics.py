"""The SSE parser and the level statistics on hand-built inputs."""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repro.bench.client.http1 import Connection
from repro.bench.client.result import RequestResult
from repro.bench.client.wire import GEN_DECODER, SSEParser, decode_generate, finish_type
from repro.bench.metrics import parse_slos, summarize_level
from repro.errors import ReproError
from tests.support.transport import NullTransport


def test_sse_events_split_across_reads_and_batched_in_one_read() -> None:
    parser = SSEParser()
    assert parser.feed(b'data: {"a"') == []
    assert parser.feed(b': 1}\n\ndata: {"b": 2}\n\ndata: [DO') == [b'{"a": 1}', b'{"b": 2}']
    assert parser.feed(b"NE]\n\n") == [b"[DONE]"]
    assert parser.feed(b'data: {"c": 3}\r\n\r\n: comment\n\n') == [b'{"c": 3}']


def test_narrow_decoder_skips_cumulative_text() -> None:
    chunk = GEN_DECODER.decode(
        b'{"text": "' + b"x" * 10_000 + b'", "output_ids": [1, 2], "meta_info": {"id": "r",'
        b' "finish_reason": {"type": "length", "length": 2}, "prompt_tokens": 5,'
        b' "completion_tokens": 2, "cached_tokens": 1, "spec_verify_ct": 1, "e2e_latency": 0.1}}'
    )
    assert chunk.meta_info is not None
    assert (chunk.meta_info.completion_tokens, chunk.meta_info.spec_verify_ct) == (2, 1)
    assert finish_type(chunk.meta_info.finish_reason) == "length"


def _req(i: int, ttft: float, itl: list[float], tokens: int, verify: int | None) -> RequestResult:
    e2e = ttft + sum(itl)
    return RequestResult(
        1, 0, i, ok=True, prompt_tokens=10, completion_tokens=tokens, spec_verify_ct=verify,
        ttft_s=ttft, chunk_gap_s=itl, chunk_tokens=[1] * len(itl), e2e_s=e2e,
    )  # fmt: skip


def test_level_summary_keys_and_values() -> None:
    results = [
        _req(0, 0.1, [0.01] * 9, 10, 4),
        _req(1, 0.3, [0.03] * 9, 10, 1),
        RequestResult(1, 0, 2, error_kind="timeout"),
    ]
    level = summarize_level(results, concurrency=1, repeat=0, duration=2.0, gpus=4)
    assert level.completed == 2 and level.failed == 1
    assert level.errors == {"timeout": 1}
    assert level.output_throughput == pytest.approx(10.0)
    assert level.output_throughput_per_gpu == pytest.approx(2.5)
    assert level.median_ttft_ms == pytest.approx(200.0)
    assert level.mean_itl_ms == pytest.approx(20.0)
    assert level.median_tpot_ms == pytest.approx(20.0)
    assert level.accept_length == pytest.approx(20 / 5)  # never the mean of per-request ratios
    assert level.goodput is None
    slo = summarize_level(results, concurrency=1, repeat=0, duration=2.0, slos={"ttft": 200})
    assert slo.goodput == pytest.approx(0.5)


def test_summary_without_spec_or_success() -> None:
    level = summarize_level(
        [RequestResult(1, 0, 0, error_kind="connect")], concurrency=1, repeat=0, duration=1.0
    )
    assert level.completed == 0 and level.accept_length is None
    assert level.median_ttft_ms is None


def test_slo_flags_parse_to_goodput_limits() -> None:
    assert parse_slos([]) is None
    assert parse_slos(["ttft_ms=500", "TPOT_MS = 50", "e2e_ms=2e4"]) == {
        "ttft": 500.0, "tpot": 50.0, "e2e": 20000.0,
    }  # fmt: skip
    for bad in ("ttft=500", "ttft_ms", "ttft_ms=fast", "tpot_ms=0", "e2e_ms=-1", "itl_ms=5"):
        with pytest.raises(ReproError, match="KEY=MILLISECONDS") as info:
            parse_slos([bad])
        assert "--slo ttft_ms=500" in str(info.value.hint)


_PIECES = ["a", " ", '"', "\\", "\n", "}", "{", ":", "é", '"meta_info":{', '"meta_info":']
_TEXT = st.lists(st.sampled_from(_PIECES), max_size=12).map("".join)
_META = st.fixed_dictionaries(
    {"completion_tokens": st.integers(0, 5000)},
    optional={
        "prompt_tokens": st.integers(0, 5000),
        "cached_tokens": st.integers(0, 5000),
        "id": _TEXT,
        "finish_reason": st.one_of(
            st.none(), st.just("stop"), st.fixed_dictionaries({"type": st.just("length")})
        ),
        "spec_verify_ct": st.integers(0, 5000),
        "e2e_latency": st.floats(0, 10),
    },
)


@settings(max_examples=300, deadline=None)
@given(
    text=_TEXT,
    ids=st.lists(st.integers(0, 200_000), max_size=20),
    meta=st.one_of(st.none(), _META),
    tail=st.sampled_from([{}, {"index": 1}, {"output_ids": [1, 2]}]),
    error=st.booleans(),
    compact=st.booleans(),
)
def test_generate_chunks_decode_as_the_full_decoder_does(
    text: str, ids: list[int], meta: dict | None, tail: dict, error: bool, compact: bool
) -> None:
    obj: dict = {"text": text, "output_ids": ids}
    if error:
        obj = {"error": {"message": text}}
    if meta is not None:
        obj["meta_info"] = meta
    obj.update(tail)
    payload = json.dumps(obj, separators=(",", ":") if compact else None).encode()
    assert decode_generate(payload) == GEN_DECODER.decode(payload)


def _response_bodies(head: bytes, reads: list[bytes]) -> tuple[int, bytes, bool, bytes]:
    """Feed a response to a Connection read by read: status, body, reusable, error body."""

    async def go() -> tuple[int, bytes, bool, bytes]:
        conn = Connection()
        conn.connection_made(NullTransport())  # type: ignore[arg-type]
        got = bytearray()
        _, done = conn.send(b"POST / HTTP/1.1\r\n\r\n", got.extend)
        for data in [head, *reads]:
            conn.data_received(data)
        assert done.done()
        return done.result(), bytes(got), conn.reusable, bytes(conn.error_body)

    return asyncio.run(go())


def _split(stream: bytes, cuts: list[int]) -> list[bytes]:
    bounds = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
    return [stream[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=200, deadline=None)
@given(
    chunks=st.lists(st.binary(min_size=1, max_size=300), max_size=6),
    cuts=st.lists(st.integers(0, 2000), max_size=8),
    extension=st.booleans(),
    trailer=st.booleans(),
)
def test_chunked_bodies_do_not_depend_on_how_reads_split_them(
    chunks: list[bytes], cuts: list[int], extension: bool, trailer: bool
) -> None:
    ext = b";x=1" if extension else b""
    stream = b"".join(b"%x%s\r\n%s\r\n" % (len(c), ext, c) for c in chunks)
    stream += b"0\r\n" + (b"X-Trailer: 1\r\n" if trailer else b"") + b"\r\n"
    head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
    status, body, reusable, _ = _response_bodies(b"", _split(head + stream, cuts))
    assert (status, body, reusable) == (200, b"".join(chunks), True)


@settings(max_examples=100, deadline=None)
@given(body=st.binary(max_size=500), cuts=st.lists(st.integers(0, 600), max_size=5))
def test_length_and_error_bodies_do_not_depend_on_how_reads_split_them(
    body: bytes, cuts: list[int]
) -> None:
    head = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(body)
    assert _response_bodies(b"", _split(head + body, cuts)) == (200, body, True, b"")
    head = b"HTTP/1.1 503 Busy\r\ncontent-length: %d\r\n\r\n" % len(body)
    assert _response_bodies(b"", _split(head + body, cuts)) == (503, b"", True, body)
