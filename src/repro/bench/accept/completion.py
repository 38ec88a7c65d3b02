"""Non-streaming `/generate` requests for `repro accept`, as z-lab's benchmark sends them
(dflash/benchmark.py `_send_sglang`: `{"text", "sampling_params": {"temperature", "top_p",
"top_k", "max_new_tokens"}}`), keeping what acceptance and the lossless check need from the
response: `output_ids` and `text`, and from `meta_info` (srt/managers/tokenizer_manager.py)
`completion_tokens`, `spec_verify_ct` and `spec_correct_drafts_histogram` (verify steps per
count of accepted drafts; managers/schedule_batch.py `update_spec_correct_drafts_histogram`).

What the server sends is decoded by msgspec into narrow structs that refuse anything but
non-negative integers (NaN, Infinity, "lots", a histogram of dicts, -50, 1e300 each fail the
request as implausible), then checked against the request: completion_tokens and the output
ids at most max_new_tokens (SGLang caps the output there), spec_verify_ct at most
completion_tokens (a verify step commits at least one token) and at least completion_tokens
over what one step can commit (repro.bench.plausible), the histogram's verify steps at most
spec_verify_ct. Requests go through the run's ServerSession: the response is read whole up to
`ClientLimits.max_event_bytes` after decompression, within the shorter of the read and
request timeouts (a non-streaming response sends nothing until it is whole); a redirect is
not followed, the request fails naming it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TypedDict

import msgspec

from repro.bench.client.bounded import Bound, Refused
from repro.bench.client.wire import MAX_COUNT, Count
from repro.bench.prompts.benchsets import Sampling
from repro.bench.session import ServerSession
from repro.schema.record import ClientLimits


@dataclass
class Completion:
    ok: bool
    completion_tokens: int = 0
    spec_verify_ct: int | None = None
    histogram: list[int] | None = None
    output_ids: list[int] = field(default_factory=list)
    text: str = ""  # the response's text: what the accuracy gate scores
    e2e_s: float = 0.0
    error: str | None = None
    implausible: bool = False  # the server sent a value no server can send
    prompt_tokens: int = 0  # as the server counted them (the context-length bucket)
    steps: list[int] = field(default_factory=list)  # streamed: tokens per verify step

    @property
    def accept_length(self) -> float | None:
        if not self.ok or not self.spec_verify_ct:
            return None
        return self.completion_tokens / self.spec_verify_ct


@dataclass
class Batch:
    results: list[Completion]
    wall_s: float  # first request sent to last response read


class SamplingParams(Sampling):
    max_new_tokens: int


class Payload(TypedDict):
    """One request's `/generate` body, as z-lab's benchmark sends it."""

    text: str
    sampling_params: SamplingParams


def body(text: str, max_new_tokens: int, sampling: Sampling) -> Payload:
    return {"text": text, "sampling_params": {**sampling, "max_new_tokens": max_new_tokens}}


class _Meta(msgspec.Struct):
    prompt_tokens: Count = 0
    completion_tokens: Count = 0
    spec_verify_ct: Count | None = None
    spec_correct_drafts_histogram: list[Count] | None = None


class _Output(msgspec.Struct):
    meta_info: _Meta | None = None
    text: str | None = None
    output_ids: list[Count] | None = None


_DECODER = msgspec.json.Decoder(_Output | list[_Output])


def _implausible(e2e: float, why: str) -> Completion:
    return Completion(
        ok=False, e2e_s=e2e, error=f"a value no server can send: {why}", implausible=True
    )


def _completion(
    raw: bytes, e2e: float, max_new_tokens: int, max_accept: float = MAX_COUNT
) -> Completion:
    try:
        doc = _DECODER.decode(raw)
    except msgspec.ValidationError as exc:
        return _implausible(e2e, str(exc))
    except msgspec.DecodeError as exc:  # NaN and Infinity are not JSON either
        return _implausible(e2e, f"not a JSON response: {exc}")
    out = doc[0] if isinstance(doc, list) and doc else doc
    if not isinstance(out, _Output) or out.meta_info is None:
        return Completion(ok=False, e2e_s=e2e, error="a response without meta_info")
    meta, ids = out.meta_info, out.output_ids or []
    tokens, verify = meta.completion_tokens, meta.spec_verify_ct
    hist = meta.spec_correct_drafts_histogram
    if max(tokens, len(ids)) > max_new_tokens:
        return _implausible(
            e2e, f"{max(tokens, len(ids))} output tokens for max_new_tokens {max_new_tokens}"
        )
    if verify is not None and verify > tokens:
        return _implausible(e2e, f"spec_verify_ct {verify} > completion_tokens {tokens}")
    if verify and tokens > verify * max_accept + 1:
        return _implausible(
            e2e, f"{tokens} tokens in {verify} verify steps of at most {max_accept:g} each"
        )
    if hist is not None and (len(hist) > tokens + 1 or sum(hist) > (verify or 0)):
        return _implausible(e2e, f"a histogram of {sum(hist)} verify steps in {len(hist)} bins")
    return Completion(
        ok=True,
        completion_tokens=tokens,
        spec_verify_ct=verify or None,
        histogram=hist,
        output_ids=ids,
        text=out.text or "",
        e2e_s=e2e,
        prompt_tokens=meta.prompt_tokens,
    )


def response_bound(limits: ClientLimits) -> Bound:
    """A whole response: `max_event_bytes`, within the shorter timeout given (0: none)."""
    timeouts = [t for t in (limits.read_timeout_s, limits.request_timeout_s) if t > 0]
    return Bound(limits.max_event_bytes, min(timeouts) if timeouts else None)


class BatchSender:
    """Sends a batch of accept's payloads, at most `concurrency` in flight, through `one`
    (each subclass's way of sending a request), on the run's session's loop."""

    session: ServerSession

    async def one(self, payload: Payload) -> Completion:
        raise NotImplementedError

    def connected(self) -> AbstractAsyncContextManager[object]:
        """What `one` needs open while a batch runs (nothing here: the session's own pool)."""
        return contextlib.nullcontext()

    async def all(
        self,
        payloads: list[Payload],
        concurrency: int,
        on_done: Callable[[int], None] = lambda _n: None,
    ) -> Batch:
        """Every payload, at most `concurrency` in flight, results in payload order; `on_done`
        gets the count finished so far after each."""
        gate = asyncio.Semaphore(max(1, concurrency))
        finished: list[Completion] = []

        async def gated(payload: Payload) -> Completion:
            async with gate:
                result = await self.one(payload)
            finished.append(result)
            on_done(len(finished))
            return result

        async with self.connected():
            start = time.perf_counter()
            results = await asyncio.gather(*(gated(p) for p in payloads))
        return Batch(list(results), time.perf_counter() - start)

    def run(
        self,
        payloads: list[Payload],
        concurrency: int,
        on_done: Callable[[int], None] = lambda _n: None,
    ) -> Batch:
        return self.session.call(self.all(payloads, concurrency, on_done))


@dataclass(frozen=True)
class Sender(BatchSender):
    """Where and how accept's requests go: the run's session, the response bound, the most
    tokens a verify step can commit on that server."""

    session: ServerSession
    bound: Bound
    max_accept: float = MAX_COUNT

    async def one(self, payload: Payload) -> Completion:
        start = time.perf_counter()
        try:
            response = await self.session.generate(payload, self.bound)
        except Refused as exc:
            return Completion(ok=False, error=str(exc))
        except TimeoutError:
            return Completion(ok=False, error="the response did not come within the read or "
                              "request timeout")  # fmt: skip
        except OSError as exc:
            return Completion(ok=False, error=f"{type(exc).__name__}: {exc}")
        if response.redirect:
            where = response.location or "?"
            return Completion(
                ok=False, error=f"a redirect (HTTP {response.status} to {where}), not followed"
            )
        if response.status != 200:
            text = response.body[:200].decode(errors="replace")
            return Completion(ok=False, error=f"HTTP {response.status}: {text}")
        max_new_tokens = payload["sampling_params"]["max_new_tokens"]
        e2e = time.perf_counter() - start
        return _completion(response.body, e2e, max_new_tokens, self.max_accept)
