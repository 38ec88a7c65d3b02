"""What a streaming response's events mean: token events, counts, the end of the stream.

`repro.bench.client.http1.Connection` hands each read of a response body to `EventReader.feed`, in
its read callback; the reader stamps the read with `time.perf_counter()`, splits the SSE
events and records them in the request's `RequestResult`. Several events of one read share
its time (an ITL gap of 0). A result whose `text` starts as "" also gets the generated text
(a conversation's next turn carries it): on /generate the finished chunk's `text`, which is
cumulative unless the server runs with --incremental-streaming-output; on chat the deltas.

Every count the server sends is checked against what the request allows (`Bounds`): the
decoder refuses negative, huge and non-numeric values (repro.bench.client.wire), and here
completion_tokens may not exceed the request's max_new_tokens nor go back, prompt_tokens not
exceed what the request's bytes can hold, cached_tokens not exceed prompt_tokens and
spec_verify_ct not exceed completion_tokens (each verify step commits at least its bonus
token: scheduler_components/batch_result_processor.py; the output is capped at
max_new_tokens: managers/schedule_batch.py `_cap_finished_len_at_max_new_tokens`), nor
completion_tokens exceed what spec_verify_ct steps can commit (`max_accept` each, plus the
prefill's token: repro.bench.plausible). A value outside them raises `Implausible`, which
fails the request.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from repro.bench.client.result import RequestResult
from repro.bench.client.wire import (
    CHAT_DECODER,
    DONE,
    MAX_COUNT,
    MAX_EVENT_BYTES,
    TEXT_DECODER,
    GenMeta,
    SSEParser,
    decode_generate,
    finish_type,
    spec_verify_ct,
)


class StreamStopped(Exception):
    """A server error chunk ended the stream (recorded in the result; the rest is not read)."""


class Implausible(ValueError):
    """The server sent a value no server can send for this request."""


PROMPT_TEMPLATE_TOKENS = 4096
"""Tokens a server's chat template may add to a prompt beyond the request's own bytes."""


@dataclass(frozen=True, slots=True)
class Bounds:
    """What a request allows the server to report: completion tokens up to `max_tokens`
    (the request's max_new_tokens / max_tokens), prompt tokens up to `max_prompt_tokens` (a
    token is at least one byte of the request, plus what a chat template adds), tokens per
    verify step up to `max_accept` (the server's draft tokens + 1)."""

    max_tokens: int = MAX_COUNT
    max_prompt_tokens: int = MAX_COUNT
    max_event_bytes: int = MAX_EVENT_BYTES
    max_accept: float = MAX_COUNT

    @classmethod
    def of_request(
        cls,
        body: bytes,
        max_tokens: int | None,
        max_event_bytes: int = MAX_EVENT_BYTES,
        max_accept: float = MAX_COUNT,
    ) -> Bounds:
        return cls(
            max_tokens if max_tokens is not None else MAX_COUNT,
            len(body) + PROMPT_TEMPLATE_TOKENS,
            max_event_bytes,
            max_accept,
        )


class EventReader:
    """One streaming response: `feed` takes each read of its body.

    `done` is set by `data: [DONE]`. `live.last` is the arrival time of the latest bytes (the
    stall watchdog's). `start` is when the request's bytes left.
    """

    __slots__ = ("bounds", "done", "last_t", "last_tokens", "live", "result", "sse", "start")

    def __init__(
        self, result: RequestResult, start: float, live: Any, bounds: Bounds = Bounds()
    ) -> None:
        self.result, self.start, self.live, self.bounds = result, start, live, bounds
        self.sse = SSEParser(bounds.max_event_bytes).feed
        self.done = False
        self.last_t = 0.0
        self.last_tokens = 0

    def feed(self, data: bytes) -> None:
        raise NotImplementedError

    def tokens_now(self, now: float, tokens: int) -> None:
        """The server's cumulative completion token count after an event: when it grew, a
        token event (the first is the TTFT, each later one a chunk gap with the tokens its
        event carried, from which bench_serving's per-token ITL follows); an `Implausible`
        when it went back or past the request's max tokens."""
        last = self.last_tokens
        if tokens > last:
            if tokens > self.bounds.max_tokens:
                raise Implausible(
                    f"completion_tokens {tokens} is more than the request's "
                    f"max tokens {self.bounds.max_tokens}"
                )
            result = self.result
            if result.ttft_s is None:
                result.ttft_s = now - self.start
            else:
                result.chunk_gap_s.append(now - self.last_t)
                result.chunk_tokens.append(tokens - last)
            self.last_t = now
            self.last_tokens = tokens
        elif tokens < last:
            raise Implausible(f"completion_tokens went back from {last} to {tokens}")

    def check_counts(self) -> None:
        """The final counts against each other and the request (after a complete stream)."""
        r, bounds = self.result, self.bounds
        if r.prompt_tokens > bounds.max_prompt_tokens:
            raise Implausible(
                f"prompt_tokens {r.prompt_tokens} is more than a request of "
                f"{bounds.max_prompt_tokens - PROMPT_TEMPLATE_TOKENS} bytes can hold"
            )
        if r.completion_tokens > bounds.max_tokens:
            raise Implausible(
                f"completion_tokens {r.completion_tokens} is more than the request's "
                f"max tokens {bounds.max_tokens}"
            )
        if r.cached_tokens > r.prompt_tokens:
            raise Implausible(
                f"cached_tokens {r.cached_tokens} is more than prompt_tokens {r.prompt_tokens}"
            )
        verify = r.spec_verify_ct
        if verify is not None and verify > r.completion_tokens:
            raise Implausible(
                f"spec_verify_ct {verify} is more than completion_tokens "
                f"{r.completion_tokens} (each verify step commits a token)"
            )
        if verify and r.completion_tokens > verify * bounds.max_accept + 1:
            raise Implausible(
                f"completion_tokens {r.completion_tokens} in {verify} verify steps: more than "
                f"the {bounds.max_accept:g} tokens a step can commit"
            )

    def server_error(self, message: str) -> None:
        self.result.error_kind = "server_error"
        self.result.error = message[:500]
        raise StreamStopped(message[:500])


class GenerateReader(EventReader):
    """SGLang's `/generate` stream: a token event whenever `completion_tokens` grows."""

    __slots__ = ("last",)

    def __init__(
        self, result: RequestResult, start: float, live: Any, bounds: Bounds = Bounds()
    ) -> None:
        super().__init__(result, start, live, bounds)
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
            if meta.completion_tokens != self.last_tokens:
                self.tokens_now(now, meta.completion_tokens)
            if meta.finish_reason is not None:
                result.finish_reason = finish_type(meta.finish_reason)
                if result.text is not None:  # kept: the whole text (cumulative by default)
                    result.text = TEXT_DECODER.decode(payload).text
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

    __slots__ = ()

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
                if delta is not None and delta.content and result.text is not None:
                    result.text += delta.content
                if delta is not None and (delta.content or delta.reasoning_content):
                    tokens = usage.completion_tokens if usage is not None else self.last_tokens + 1
                    if tokens != self.last_tokens:  # no new token: bench_serving skips these
                        self.tokens_now(now, tokens)
                if choice.finish_reason is not None:
                    result.finish_reason = choice.finish_reason[:64]
            if usage is not None:
                result.prompt_tokens = usage.prompt_tokens
                result.completion_tokens = usage.completion_tokens
                details = usage.prompt_tokens_details
                result.cached_tokens = (details.cached_tokens or 0) if details else 0
            if chunk.sglext is not None:
                result.spec_verify_ct = spec_verify_ct(chunk.sglext)
        result.e2e_s = now - self.start
