"""What a streaming response's events mean: token events, counts, the end of the stream.

`repro.bench.http1.Connection` hands each read of a response body to `EventReader.feed`, in
its read callback; the reader stamps the read with `time.perf_counter()`, splits the SSE
events and records them in the request's `RequestResult`. Several events of one read share
its time (an ITL gap of 0).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from repro.bench.wire import (
    CHAT_DECODER,
    DONE,
    GenMeta,
    SSEParser,
    decode_generate,
    finish_type,
    spec_verify_ct,
)

if TYPE_CHECKING:
    from repro.bench.client import RequestResult


class StreamStopped(Exception):
    """A server error chunk ended the stream (recorded in the result; the rest is not read)."""


class EventReader:
    """One streaming response: `feed` takes each read of its body.

    `done` is set by `data: [DONE]`. `live.last` is the arrival time of the latest bytes (the
    stall watchdog's). `start` is when the request's bytes left.
    """

    __slots__ = ("done", "last_t", "live", "result", "sse", "start")

    def __init__(self, result: RequestResult, start: float, live: Any) -> None:
        self.result, self.start, self.live = result, start, live
        self.sse = SSEParser().feed
        self.done = False
        self.last_t = 0.0

    def feed(self, data: bytes) -> None:
        raise NotImplementedError

    def token_event(self, now: float, new_tokens: int) -> None:
        """An event that carried `new_tokens` tokens: the first is the TTFT, each later one a
        chunk gap with its token count (from which bench_serving's per-token ITL follows)."""
        result = self.result
        if result.ttft_s is None:
            result.ttft_s = now - self.start
        else:
            result.chunk_gap_s.append(now - self.last_t)
            result.chunk_tokens.append(new_tokens)
        self.last_t = now

    def server_error(self, message: str) -> None:
        self.result.error_kind = "server_error"
        self.result.error = message
        raise StreamStopped(message)


class GenerateReader(EventReader):
    """SGLang's `/generate` stream: a token event whenever `completion_tokens` grows."""

    __slots__ = ("last", "last_tokens")

    def __init__(self, result: RequestResult, start: float, live: Any) -> None:
        super().__init__(result, start, live)
        self.last_tokens = 0
        self.last: GenMeta | None = None

    def feed(self, data: bytes) -> None:
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
            meta = chunk.meta_info
            if meta is None:
                continue
            self.last = meta
            if meta.completion_tokens > self.last_tokens:
                self.token_event(now, meta.completion_tokens - self.last_tokens)
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
    """`/v1/chat/completions`: a token event per choice delta with content that brings new
    tokens (the request asks for usage on every chunk; without it, one token per delta).
    Speculative stats come in `sglext.spec_tokens_details` (serving_chat.py)."""

    __slots__ = ("last_tokens",)

    def __init__(self, result: RequestResult, start: float, live: Any) -> None:
        super().__init__(result, start, live)
        self.last_tokens = 0

    def feed(self, data: bytes) -> None:
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
            usage = chunk.usage
            for choice in chunk.choices:
                delta = choice.delta
                if delta is not None and (delta.content or delta.reasoning_content):
                    tokens = usage.completion_tokens if usage is not None else self.last_tokens + 1
                    if tokens > self.last_tokens:  # no new token: bench_serving skips these
                        self.token_event(now, tokens - self.last_tokens)
                        self.last_tokens = tokens
                if choice.finish_reason is not None:
                    result.finish_reason = choice.finish_reason
            if usage is not None:
                result.prompt_tokens = usage.prompt_tokens
                result.completion_tokens = usage.completion_tokens
                details = usage.prompt_tokens_details
                result.cached_tokens = (details.cached_tokens or 0) if details else 0
            if chunk.sglext is not None:
                result.spec_verify_ct = spec_verify_ct(chunk.sglext)
        result.e2e_s = now - self.start
