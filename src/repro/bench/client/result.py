"""One request as the client saw it: what the stream fills in (repro.bench.client.readers,
repro.bench.client.stream) and what the metrics and the level record read."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class RequestResult:
    """One request as the client saw it (a line of `levels/c<C>-r<R>.jsonl`)."""

    concurrency: int
    repeat: int
    index: int
    ok: bool = False
    error_kind: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    spec_verify_ct: int | None = None
    ttft_s: float | None = None
    chunk_gap_s: list[float] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    e2e_s: float | None = None
    start_s: float = 0.0
    offered_s: float | None = None  # open loop: when the schedule offered it
    finish_reason: str | None = None
    error: str | None = None
    text: str | None = None  # the generated text, kept only when it starts as ""
