"""What the simulator's native and OpenAI routes share: request flows and response helpers.

A flow is the set of simulated requests behind one HTTP request; `Frontend` opens, feeds and
closes them, notices clients that left, and streams their progress. The JSON and SSE helpers
write bodies the way SGLang's FastAPI server does (compact JSON, `data: ...` events, a final
`data: [DONE]`). Written against aiohttp 3.8 (Debian 12) and newer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncGenerator
from typing import Any

from aiohttp import web

from repro.sim.config import SimConfig
from repro.sim.contract import json_invalid
from repro.sim.request import Req
from repro.sim.tokenizer_manager import TokenizerManager

_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)  # compact, like orjson


def dumps(obj: Any) -> bytes:
    return _ENCODER.encode(obj).encode()


def json_response(obj: Any, status: int = 200) -> web.Response:
    return web.Response(body=dumps(obj), status=status, content_type="application/json")


def sse_event(obj: Any) -> bytes:
    """One server-sent event carrying `obj` as JSON."""
    return b"data: " + dumps(obj) + b"\n\n"


SSE_DONE = b"data: [DONE]\n\n"


def sse_response() -> web.StreamResponse:
    """An event stream not yet started. Its caller sends the headers (`prepare`) inside the
    block that handles the client leaving: a client can hang up before the headers go out,
    and that is a client leaving, not a server error."""
    return web.StreamResponse(
        status=200, headers={"Content-Type": "text/event-stream; charset=utf-8"}
    )


async def sse_once(request: web.Request, events: list[Any]) -> web.StreamResponse:
    """A whole stream at once: these events, then `[DONE]`."""
    resp = sse_response()
    with contextlib.suppress(ConnectionError):  # the client left: nobody to tell
        await resp.prepare(request)
        for event in events:
            await resp.write(sse_event(event))
        await resp.write(SSE_DONE)
        await resp.write_eof()
    return resp


class Flow:
    """The requests behind one HTTP request, and whether its client is still there."""

    __slots__ = ("event", "gone", "reqs", "request", "sends")

    def __init__(self, request: web.Request) -> None:
        self.request = request
        self.event = asyncio.Event()
        self.reqs: list[Req] = []
        self.gone = False
        self.sends: dict[int, list[tuple[float, int]]] = {}

    def done(self) -> bool:
        return all(r.finished or r.aborted for r in self.reqs)

    def record_whole_sends(self) -> None:
        """For the trace: a non-streaming response sends each request's output at once, now."""
        for req in self.reqs:
            self.sends[req.index] = [(time.time(), len(req.output_ids))]


class Frontend:
    """What every route works with: the config, the tokenizer manager, the gate that opens
    once the weights are "loaded", and the flows of the HTTP requests in progress."""

    def __init__(self, cfg: SimConfig, tokenizer_manager: TokenizerManager, version: str) -> None:
        self.cfg = cfg
        self.tokenizer_manager = tokenizer_manager
        self.version = version
        self.loaded = asyncio.Event()
        self.flows: set[Flow] = set()

    async def read_json(self, request: web.Request) -> Any:
        """The parsed body, or raise RequestValidationError as FastAPI would."""
        raw = await request.read()
        try:
            return json.loads(raw.decode("utf-8") if raw else "")
        except json.JSONDecodeError as e:
            raise json_invalid(e.msg, e.pos) from None
        except UnicodeDecodeError as e:
            raise json_invalid(str(e), e.start) from None

    def open_flow(self, request: web.Request) -> Flow:
        flow = Flow(request)
        self.flows.add(flow)
        return flow

    def submit(self, flow: Flow, reqs: list[Req]) -> None:
        flow.reqs = reqs
        for req in reqs:
            self.tokenizer_manager.submit(req)

    def close_flow(self, flow: Flow, endpoint: str) -> None:
        self.flows.discard(flow)
        manager = self.tokenizer_manager
        for req in flow.reqs:
            if not req.finished and not req.aborted:
                manager.abort(req)
            manager.forget(req)
            manager.trace(req, endpoint, flow.sends.get(req.index, []))

    async def watch_disconnects(self) -> None:
        """aiohttp >= 3.9 does not cancel a handler whose client left: look for them."""
        while True:
            await asyncio.sleep(0.25)
            for flow in list(self.flows):
                transport = flow.request.transport
                if transport is None or transport.is_closing():
                    flow.gone = True
                    for req in flow.reqs:
                        self.tokenizer_manager.abort(req)
                    flow.event.set()

    async def wait(self, flow: Flow) -> None:
        await flow.event.wait()
        flow.event.clear()

    async def wait_done(self, flow: Flow) -> None:
        """Until every request of the flow has finished, or its client left."""
        while not flow.done() and not flow.gone:
            await self.wait(flow)

    async def updates(self, flow: Flow) -> AsyncGenerator[tuple[Req, int], None]:
        """Each request of a streaming flow whenever it has new output (and once when it
        finishes), with the number of output ids already sent; every send is recorded in
        `flow.sends` for the trace, stamped when the consumer comes back for the next update,
        that is once it has written this one (serialising a chunk takes the simulator tens of
        microseconds: a stamp taken before would make a client look late by that much). Both
        the native and the OpenAI streams are built on it."""
        ids_sent = {req.index: 0 for req in flow.reqs}
        done: set[int] = set()
        while len(done) < len(flow.reqs) and not flow.gone:
            await self.wait(flow)
            for req in flow.reqs:
                if req.index in done or (req.aborted and not req.finished):
                    continue
                before = ids_sent[req.index]
                if len(req.output_ids) == before and not req.finished:
                    continue
                ids_sent[req.index] = len(req.output_ids)
                if req.finished:
                    done.add(req.index)
                new_ids = len(req.output_ids) - before
                yield req, before
                flow.sends.setdefault(req.index, []).append((time.time(), new_ids))
