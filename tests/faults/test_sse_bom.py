"""Issue 43, item 6: one UTF-8 byte order mark before a stream's first event is dropped, as
the SSE standard says, so the first event counts (TTFT is its arrival, not the next one's),
however the reads split the mark; a second mark is not the standard's and is not dropped."""

from __future__ import annotations

import pytest

from repro.bench.client.stream import LevelRun, StreamClient, measure
from repro.bench.client.wire import BOM, SSEParser, generate_body
from tests.bench.hostileserver import CHUNKED_SSE, chunk, meta_event, sse
from tests.faults.routed_server import routed_server, sglang


def _with_bom(events: int) -> bytes:
    first = meta_event(completion_tokens=1)  # a chunk: its data starts after the size line
    size, _, rest = first.partition(b"\r\n")
    body = chunk(BOM + rest[: int(size, 16)])
    later = b"".join(meta_event(completion_tokens=n) for n in range(2, events + 1))
    return CHUNKED_SSE + body + later + sse(b"[DONE]") + b"0\r\n\r\n"


def test_a_bom_before_the_first_event_keeps_that_event() -> None:
    async def one(url: str) -> LevelRun:
        async with StreamClient(url) as client:
            return await client.run(
                [generate_body("hi", 4, temperature=0.0, ignore_eos=True)], 1, max_tokens=4
            )

    with routed_server(sglang(routes={"/generate": _with_bom(4)})) as url:
        [result] = measure(one(url)).results
    assert result.ok, result.error
    # four token events: the first is the TTFT, three chunk gaps follow
    assert result.completion_tokens == 4 and result.chunk_tokens == [1, 1, 1]


@pytest.mark.parametrize("split", [1, 2, 3])
def test_a_bom_split_across_reads_is_dropped(split: int) -> None:
    stream = BOM + b"data: {}\n\ndata: [DONE]\n\n"
    parser = SSEParser()
    events = parser.feed(stream[:split]) + parser.feed(stream[split:])
    assert events == [b"{}", b"[DONE]"]


def test_only_one_bom_is_dropped() -> None:
    assert SSEParser().feed(BOM + BOM + b"data: {}\n\n") == []
