"""A hostile "SGLang" on 127.0.0.1 that answers every request with raw bytes chosen per path
and per visit: what no HTTP framework would send (a gzip bomb, a redirect, a model that
changes on the second `/server_info`, impossible gauges, a BOM before the first event).

`answer(path, visit)` returns the whole response (status line, headers, body) for the
`visit`-th request (from 1) to `path`, or None for a 404. The server runs its own event loop
in a thread until the block ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from tests.bench.hostileserver import json_response, meta_event, stream, threaded_server

Answer = Callable[[str, int], bytes | None]

# what `repro bench --url` and `repro accept --url` need to start (a speculative server)
INFO: dict[str, Any] = {
    "version": "hostile",
    "model_path": "repro-sim/tiny-chat",
    "speculative_algorithm": "DFLASH",
    "speculative_num_draft_tokens": 8,
    "max_running_requests": 64,
}
NOT_FOUND = json_response({"detail": "Not Found"}, "404 Not Found")


def gzipped_json(raw: bytes) -> bytes:
    """`raw` as a gzip-encoded JSON response (a server may compress unasked)."""
    body = gzip.compress(raw, compresslevel=9)
    head = (
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def redirect(to: str) -> bytes:
    return f"HTTP/1.1 302 Found\r\nlocation: {to}\r\ncontent-length: 0\r\n\r\n".encode()


def text_response(body: bytes) -> bytes:
    head = f"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {len(body)}\r\n\r\n"
    return head.encode() + body


def tokens_stream(count: int, **last: Any) -> bytes:
    """A `/generate` stream of `count` token events, `last` added to the final meta_info."""
    events = [meta_event(completion_tokens=n) for n in range(1, count)]
    events.append(meta_event(completion_tokens=count, finish_reason={"type": "length"}, **last))
    return stream(*events)


def generated(completion_tokens: int, spec_verify_ct: int) -> bytes:
    """A non-streaming `/generate` response (accept's)."""
    return json_response(
        {
            "text": "x",
            "output_ids": [1] * completion_tokens,
            "meta_info": {
                "completion_tokens": completion_tokens,
                "spec_verify_ct": spec_verify_ct,
            },
        }
    )


Reply = bytes | Callable[[int], bytes]


def sglang(info: dict[str, Any] | None = None, routes: dict[str, Reply] | None = None) -> Answer:
    """A server that answers like SGLang (`info` on /server_info, 200 on /flush_cache, a
    4-token stream on /generate) except on `routes` (path -> the reply, or a function of the
    visit giving it)."""
    fixed = routes or {}

    def answer(path: str, visit: int) -> bytes | None:
        if path in fixed:
            reply = fixed[path]
            return reply if isinstance(reply, bytes) else reply(visit)
        if path in ("/server_info", "/get_server_info"):
            return json_response(info or INFO)
        if path == "/flush_cache":
            return json_response({})
        if path == "/generate":
            return tokens_stream(4)
        return None

    return answer


async def _read_request(reader: asyncio.StreamReader) -> str | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    length = next(
        (int(v) for k, _, v in (line.partition(":") for line in lines[1:])
         if k.strip().lower() == "content-length"),
        0,
    )  # fmt: skip
    await reader.readexactly(length)
    return [*lines[0].split(" "), ""][1].split("?")[0]


@contextlib.contextmanager
def routed_server(answer: Answer) -> Iterator[str]:
    """The server's URL while the block runs."""
    visits: Counter[str] = Counter()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while (path := await _read_request(reader)) is not None:
                visits[path] += 1
                writer.write(answer(path, visits[path]) or NOT_FOUND)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    with threaded_server(serve, lambda listener: listener.close()) as (url, _listener):
        yield url
