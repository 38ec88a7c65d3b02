"""The client's own limits on a request, recorded with each run (run.json, accept.json)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ClientLimits(BaseModel):
    """What ends a request whatever the server does (repro.bench.client.stream): silence, total
    time, the size of one response event (SSE event, or a non-streaming response)."""

    read_timeout_s: float = Field(
        default=300.0, description="seconds without a byte before a request fails (0: no limit)"
    )
    request_timeout_s: float = Field(
        default=3600.0, description="seconds from a request's start to its end at most (0: none)"
    )
    max_event_bytes: int = Field(
        default=64 * 1024 * 1024,
        description="bytes of one SSE event (or non-streaming response) at most",
    )
