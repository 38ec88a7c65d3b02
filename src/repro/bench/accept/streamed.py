"""accept's requests streamed, for acceptance by output position: the same `/generate`
payloads with `"stream": true`, sent through the bench's streaming client
(repro.bench.client.stream: its limits, its checks of every count), so that each response's
chunks give the tokens every verify step committed, in order
(repro.bench.accept.buckets says what a chunk is), and the text for the accuracy gate. A
streamed response carries no output ids and no accepted-drafts histogram (meta_info has them
only whole): the lossless check needs the non-streamed requests.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from repro.bench.accept.completion import BatchSender, Completion, Payload
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
        text=result.text or "",
        prompt_tokens=result.prompt_tokens,
        steps=list(result.chunk_tokens),
    )


@dataclass
class StreamedSender(BatchSender):
    """Where accept's streamed requests go: the run's server (its session, for the calls
    around them), the client's limits, the most tokens a verify step can commit there."""

    session: ServerSession
    limits: ClientLimits
    max_accept: float
    _client: StreamClient | None = field(default=None, init=False, repr=False)

    async def one(self, payload: Payload) -> Completion:
        if self._client is None:
            raise RuntimeError("StreamedSender.one outside `all`")
        result = RequestResult(0, 0, 0, text="")
        body = json.dumps({**payload, "stream": True}).encode()
        max_new_tokens = payload["sampling_params"]["max_new_tokens"]
        await self._client.request(body, result, time.perf_counter(), max_new_tokens)
        return _completion(result)

    @contextlib.asynccontextmanager
    async def connected(self) -> AsyncIterator[StreamClient]:
        """One streaming client for the batch, its connections kept alive across requests."""
        url, limits = self.session.url, self.limits
        async with StreamClient.limited(url, "generate", limits, self.max_accept) as client:
            self._client = client
            try:
                yield client
            finally:
                self._client = None
