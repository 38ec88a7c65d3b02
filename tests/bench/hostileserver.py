"""A hostile "SGLang" on 127.0.0.1: raw bytes on a TCP socket, so that it can send what no HTTP
framework would (bad framing, endless events, impossible numbers, silence, closed sockets).

`GET /server_info` answers like SGLang (so that `repro bench` and `repro accept` start) and
`POST /flush_cache` with 200; every `POST /generate` and `/v1/chat/completions` goes to the
scenario, an async function of (server, request number, writer) that writes the response, or
none (`server.die()` ends every connection and the listener, as `docker kill` would).
Any other request gets a 404. The server runs its own event loop in a thread and ends its
connections when the block ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

Scenario = Callable[["HostileServer", int, asyncio.StreamWriter], Awaitable[None]]

# model_path is the demo recipe's, so that `repro accept demo --url` gets past the identity check
SERVER_INFO = {
    "version": "hostile",
    "model_path": "repro-sim/tiny-chat",
    "max_running_requests": 64,
}
CHUNKED_SSE = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
)


def chunk(data: bytes) -> bytes:
    """One chunk of a chunked body."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def sse(obj: Any) -> bytes:
    """One SSE event, as a chunk; `obj` raw bytes or a JSON-able value."""
    payload = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return chunk(b"data: " + payload + b"\n\n")


def meta_event(**meta: Any) -> bytes:
    return sse({"text": "x", "meta_info": {"prompt_tokens": 4, "completion_tokens": 1, **meta}})


def stream(*events: bytes) -> bytes:
    """A whole chunked SSE response: the events, `data: [DONE]`, the last chunk."""
    return CHUNKED_SSE + b"".join(events) + sse(b"[DONE]") + b"0\r\n\r\n"


def json_response(obj: Any, status: str = "200 OK") -> bytes:
    body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    head = f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}"
    return head.encode() + b"\r\n\r\n" + body


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str] | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path = [*lines[0].split(" "), "", ""][:2]
    length = next(
        (int(v) for k, _, v in (line.partition(":") for line in lines[1:])
         if k.strip().lower() == "content-length"),
        0,
    )  # fmt: skip
    await reader.readexactly(length)
    return method, path


class HostileServer:
    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.requests = 0  # POSTs to a generation endpoint so far
        self.listener: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while (request := await _read_request(reader)) is not None:
                method, path = request
                if method == "GET" and path in ("/server_info", "/get_server_info"):
                    writer.write(json_response(SERVER_INFO))
                elif method == "POST" and path == "/flush_cache":
                    writer.write(json_response(b"", "200 OK"))
                elif method == "POST" and path in ("/generate", "/v1/chat/completions"):
                    self.requests += 1
                    await self.scenario(self, self.requests, writer)
                else:
                    writer.write(json_response({"detail": "Not Found"}, "404 Not Found"))
                await writer.drain()
                if writer.is_closing():
                    return
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    def die(self) -> None:
        if self.listener is not None:
            self.listener.close()
        for writer in list(self._writers):
            writer.transport.abort()


@contextlib.contextmanager
def threaded_server(
    serve: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
    on_stop: Callable[[asyncio.Server], None],
) -> Iterator[tuple[str, asyncio.Server]]:
    """`serve` on 127.0.0.1, on an event loop of its own in a thread, until the block ends
    (`on_stop` first, then every task cancelled): the server's URL and listener."""
    loop = asyncio.new_event_loop()
    listener = loop.run_until_complete(asyncio.start_server(serve, "127.0.0.1", 0))
    port = listener.sockets[0].getsockname()[1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}", listener
    finally:

        async def stop() -> None:
            on_stop(listener)
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(stop(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


@contextlib.contextmanager
def hostile_server(scenario: Scenario) -> Iterator[str]:
    """The server's URL while the block runs."""
    server = HostileServer(scenario)
    with threaded_server(server._serve, lambda _listener: server.die()) as (url, listener):
        server.listener = listener
        yield url
