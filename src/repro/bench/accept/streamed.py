"""accept's requests streamed, for acceptance by output position: the same `/generate`
payloads with `"stream": true`, sent through the bench's streaming client
(repro.bench.client.stream: its limits, its checks of every count), so that each response's
chunks give the tokens every verify step committed, in order
(repro.bench.accept.buckets says what a chunk is). A streamed response carries no output ids
and no accepted-drafts histogram (meta_info has them only whole): the lossless check needs
the non-streamed requests.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from repro.bench.accept.completion import Batch, Completion
from repro.bench.client.stream import RequestResult, StreamClient
from repro.bench.session import ServerSession
from repro.schema.record import ClientLimits


def _completion(result: RequestResult) -> Completion:
    return Completion(
        ok=result.ok,
        completion_tokens=result.completion_tokens,
        spec_verify_ct=result.spec_verify_ct or None,
        e2e_s=result.e2e_s or 0.0,
        error=result.error,
        implausible=result.error_kind in ("implausible", "protocol"),
        prompt_tokens=result.prompt_tokens,
        steps=list(result.chunk_tokens),
    )


@dataclass(frozen=True)
class StreamedSender:
    """Where accept's streamed requests go: the run's server (its session, for the calls
    around them), the client's limits, the most tokens a verify step can commit there."""

    session: ServerSession
    limits: ClientLimits
    max_accept: float

    async def all(
        self, payloads: list[dict[str, Any]], concurrency: int, on_done: Callable[[int], None]
    ) -> Batch:
        gate = asyncio.Semaphore(max(1, concurrency))
        finished = 0
        client = StreamClient.limited(self.session.url, "generate", self.limits, self.max_accept)

        async def one(i: int, payload: dict[str, Any], t0: float) -> Completion:
            nonlocal finished
            result = RequestResult(concurrency, 0, i)
            body = json.dumps({**payload, "stream": True}).encode()
            async with gate:
                await client.request(body, result, t0, payload["sampling_params"]["max_new_tokens"])
            finished += 1
            on_done(finished)
            return _completion(result)

        async with client:
            start = time.perf_counter()
            results = await asyncio.gather(*(one(i, p, start) for i, p in enumerate(payloads)))
        return Batch(list(results), time.perf_counter() - start)

    def run(
        self,
        payloads: list[dict[str, Any]],
        concurrency: int,
        on_done: Callable[[int], None] = lambda _n: None,
    ) -> Batch:
        return self.session.call(self.all(payloads, concurrency, on_done))
