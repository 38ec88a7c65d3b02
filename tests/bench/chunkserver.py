"""A small real HTTP server that streams 4 tokens per chunk every 10 ms, on both endpoints:
SGLang's `/generate` (cumulative `meta_info.completion_tokens`) and `/v1/chat/completions`
(`usage` on every chunk, as `stream_options.continuous_usage_stats` asks), so that per-token
ITL and chunk gaps have known values."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

from aiohttp import web

TOKENS_PER_CHUNK = 4
CHUNK_GAP_S = 0.010
EVENTS_PER_WRITE = web.AppKey("events_per_write", int)


def _sse(data: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(data).encode() + b"\n\n"


# what /server_info reports as internal_states[0].avg_spec_accept_length: the server's own
# acceptance, which bench_serving records as `accept_length`
SERVER_ACCEPT_LENGTH = 4.0


async def _server_info(request: web.Request) -> web.Response:
    states = [{"avg_spec_accept_length": SERVER_ACCEPT_LENGTH}]
    return web.json_response(
        {"version": "test", "max_running_requests": 64, "internal_states": states}
    )


async def _models(request: web.Request) -> web.Response:
    """What bench_serving waits for before it starts (benchmark/serving.py, its ready check)."""
    return web.json_response({"object": "list", "data": [{"id": "chunk", "object": "model"}]})


async def _stream(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    chat = request.path.endswith("/completions")
    total = int(body["max_tokens"] if chat else body["sampling_params"]["max_new_tokens"])
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    loop = asyncio.get_running_loop()
    start = loop.time()
    events_per_write = request.app[EVENTS_PER_WRITE]
    pending = b""
    for step, done in enumerate(range(TOKENS_PER_CHUNK, total + 1, TOKENS_PER_CHUNK)):
        if step % events_per_write == 0:
            await asyncio.sleep(max(0.0, start + step * CHUNK_GAP_S - loop.time()))
        if chat:
            usage = {"prompt_tokens": 3, "completion_tokens": done, "total_tokens": 3 + done}
            choice = {"index": 0, "delta": {"content": "abcd"}, "finish_reason": None}
            pending += _sse({"choices": [choice], "usage": usage})
        else:
            finish = {"type": "length"} if done == total else None
            meta = {"prompt_tokens": 3, "completion_tokens": done, "finish_reason": finish}
            pending += _sse({"text": "x" * done, "meta_info": meta})
        if (step + 1) % events_per_write == 0:
            await resp.write(pending)
            pending = b""
    await resp.write(pending + b"data: [DONE]\n\n")
    return resp


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@contextmanager
def chunk_server(
    gets: dict[str, Handler] | None = None, events_per_write: int = 1
) -> Iterator[str]:
    """The server's URL while the block runs (its own event loop, in a thread); `gets` adds
    GET routes (a test's own `/metrics`, say); `events_per_write` > 1 sends that many events
    in one write, as a server's front end that fell behind does."""
    app = web.Application()
    app[EVENTS_PER_WRITE] = events_per_write
    for path, handler in (gets or {}).items():
        app.router.add_get(path, handler)
    app.router.add_get("/server_info", _server_info)
    app.router.add_get("/v1/models", _models)
    app.router.add_post("/generate", _stream)
    app.router.add_post("/v1/chat/completions", _stream)
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.run_until_complete(runner.cleanup())
        loop.close()
