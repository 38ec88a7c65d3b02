"""Reading a response stream as its bytes come off the socket, without waking a task per event.

aiohttp hands a response body to its `StreamReader` (`feed_data` per HTTP chunk, then
`feed_eof` or `set_exception`), which buffers it and wakes the task awaiting `readany()`: on
SGLang's stream that is one task step, one future and one buffer round trip per event, about
as much CPU as the rest of the event's work. Here the body's reader is switched to `_Sink`
(the same object and layout, with those three methods overridden), so each chunk is parsed and
stamped inside the parser's callback, and the request's task wakes once, at the end.

Times: an event is stamped when the parser hands over the HTTP chunk that completes it, so
several events of one socket read get times microseconds apart (the parse of the ones
before), where `readany()` gave them one time.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

import aiohttp

from repro.bench.wire import CHAT_DECODER, DONE, GenMeta, SSEParser, decode_generate, finish_type

if TYPE_CHECKING:
    from repro.bench.client import RequestResult

_READERS: dict[aiohttp.StreamReader, EventReader] = {}


class _Sink(aiohttp.StreamReader):
    """A response body whose chunks go to the `EventReader` registered for it, unbuffered."""

    __slots__ = ()

    def feed_data(self, data: bytes, size: int = 0) -> bool:
        reader = _READERS.get(self)
        if reader is not None and data:
            try:
                reader.feed(data)
            except Exception as exc:  # an undecodable chunk: the request's task raises it
                reader.stopped = True
                reader.end(exc)
        return False  # nothing buffered: never ask the parser to pause

    def begin_http_chunk_receiving(self) -> None:
        """No chunk bookkeeping: nobody calls `readchunk()` on this body."""

    def end_http_chunk_receiving(self) -> None:
        """(StreamReader's would wake the reading task at the end of every HTTP chunk.)"""

    def feed_eof(self) -> None:
        super().feed_eof()  # runs the response's end-of-body callbacks (connection release)
        reader = _READERS.get(self)
        if reader is not None:
            reader.end(None)

    def set_exception(self, exc: BaseException, *cause: Any) -> None:
        super().set_exception(exc, *cause)
        reader = _READERS.get(self)
        if reader is not None:
            reader.end(exc)


class EventReader:
    """One streaming response: `feed` takes body bytes, `consume` waits for the end.

    `done` is set by `data: [DONE]`; `stopped` by a server error chunk (the rest of the body
    is ignored). `live.last` is the arrival time of the latest bytes (the stall watchdog's).
    """

    __slots__ = ("done", "finished", "last_t", "live", "result", "sse", "start", "stopped")

    def __init__(self, result: RequestResult, start: float, live: Any) -> None:
        self.result, self.start, self.live = result, start, live
        self.sse = SSEParser().feed
        self.done = False
        self.stopped = False
        self.last_t = 0.0
        self.finished: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def consume(self, stream: aiohttp.StreamReader) -> None:
        """Read `stream` to its end (or a server error chunk); raises what the body raised."""
        data = stream.read_nowait()  # what came with or since the headers
        if data:
            self.feed(data)
        if stream.is_eof():
            self.end(None)
        else:
            stream.__class__ = _Sink
            _READERS[stream] = self
        try:
            await self.finished
        finally:
            _READERS.pop(stream, None)

    def end(self, exc: BaseException | None) -> None:
        if not self.finished.done():
            if exc is None:
                self.finished.set_result(None)
            else:
                self.finished.set_exception(exc)

    def feed(self, data: bytes) -> None:
        raise NotImplementedError

    def token_event(self, now: float) -> None:
        result = self.result
        if result.ttft_s is None:
            result.ttft_s = now - self.start
        else:
            result.itl_s.append(now - self.last_t)
        self.last_t = now

    def server_error(self, message: str) -> None:
        self.result.error_kind = "server_error"
        self.result.error = message
        self.stopped = True
        self.end(None)


class GenerateReader(EventReader):
    """SGLang's `/generate` stream: a token event whenever `completion_tokens` grows."""

    __slots__ = ("last", "last_tokens")

    def __init__(self, result: RequestResult, start: float, live: Any) -> None:
        super().__init__(result, start, live)
        self.last_tokens = 0
        self.last: GenMeta | None = None

    def feed(self, data: bytes) -> None:
        if self.stopped:
            return
        now = time.perf_counter()
        self.live.last = now
        result = self.result
        for payload in self.sse(data):
            if payload == DONE:
                self.done = True
                continue
            chunk = decode_generate(payload)
            if chunk.error is not None:
                err = chunk.error
                self.server_error(str(err.get("message", err) if isinstance(err, dict) else err))
                return
            meta = chunk.meta_info
            if meta is None:
                continue
            self.last = meta
            if meta.completion_tokens > self.last_tokens:
                self.token_event(now)
                self.last_tokens = meta.completion_tokens
            if meta.finish_reason is not None:
                result.finish_reason = finish_type(meta.finish_reason)
            if meta.spec_verify_ct is not None:
                result.spec_verify_ct = meta.spec_verify_ct
        result.e2e_s = now - self.start

    def counts(self) -> None:
        """The counts of the last meta_info seen, however the stream ended."""
        last = self.last
        if last is not None:
            result = self.result
            result.prompt_tokens = last.prompt_tokens
            result.completion_tokens = last.completion_tokens
            result.cached_tokens = last.cached_tokens


class ChatReader(EventReader):
    """`/v1/chat/completions`: a token event per choice delta with content."""

    __slots__ = ("events",)

    def __init__(self, result: RequestResult, start: float, live: Any) -> None:
        super().__init__(result, start, live)
        self.events = 0

    def feed(self, data: bytes) -> None:
        if self.stopped:
            return
        now = time.perf_counter()
        self.live.last = now
        result = self.result
        for payload in self.sse(data):
            if payload == DONE:
                self.done = True
                continue
            chunk = CHAT_DECODER.decode(payload)
            if chunk.error is not None or chunk.object == "error":
                self.server_error(str(chunk.message or chunk.error))
                return
            for choice in chunk.choices:
                delta = choice.delta
                if delta is not None and (delta.content or delta.reasoning_content):
                    self.events += 1
                    self.token_event(now)
                if choice.finish_reason is not None:
                    result.finish_reason = choice.finish_reason
            usage = chunk.usage
            if usage is not None:
                result.prompt_tokens = usage.prompt_tokens
                result.completion_tokens = usage.completion_tokens
                details = usage.prompt_tokens_details
                result.cached_tokens = (details.cached_tokens or 0) if details else 0
                result.spec_verify_ct = usage.spec_verify_ct
        result.e2e_s = now - self.start
