"""Non-streaming `/generate` requests for `repro accept`, as z-lab's benchmark sends them
(dflash/benchmark.py `_send_sglang`: `{"text", "sampling_params": {"temperature", "top_p",
"top_k", "max_new_tokens"}}`), keeping what acceptance and the lossless check need from the
response: `output_ids`, and from `meta_info` (srt/managers/tokenizer_manager.py)
`completion_tokens`, `spec_verify_ct` and `spec_correct_drafts_histogram` (requests per count
of accepted drafts in a verify step; scheduler `_calculate_spec_decoding_metrics`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from repro.bench.client import measure


@dataclass
class Completion:
    ok: bool
    completion_tokens: int = 0
    spec_verify_ct: int | None = None
    histogram: list[int] | None = None
    output_ids: list[int] = field(default_factory=list)
    e2e_s: float = 0.0
    error: str | None = None

    @property
    def accept_length(self) -> float | None:
        if not self.ok or not self.spec_verify_ct:
            return None
        return self.completion_tokens / self.spec_verify_ct


@dataclass
class Batch:
    results: list[Completion]
    wall_s: float  # first request sent to last response read


def body(text: str, max_new_tokens: int, sampling: dict[str, Any]) -> dict[str, Any]:
    return {"text": text, "sampling_params": {**sampling, "max_new_tokens": max_new_tokens}}


def _completion(doc: Any, e2e: float) -> Completion:
    out = doc[0] if isinstance(doc, list) and doc else doc
    if not isinstance(out, dict) or not isinstance(out.get("meta_info"), dict):
        return Completion(ok=False, e2e_s=e2e, error="a response without meta_info")
    meta = out["meta_info"]
    verify = meta.get("spec_verify_ct")
    hist = meta.get("spec_correct_drafts_histogram")
    return Completion(
        ok=True,
        completion_tokens=int(meta.get("completion_tokens") or 0),
        spec_verify_ct=int(verify) if verify else None,
        histogram=[int(x) for x in hist] if isinstance(hist, list) else None,
        output_ids=[int(t) for t in out.get("output_ids") or []],
        e2e_s=e2e,
    )


async def _one(session: aiohttp.ClientSession, url: str, payload: dict[str, Any]) -> Completion:
    start = time.perf_counter()
    try:
        async with session.post(f"{url}/generate", json=payload) as resp:
            if resp.status != 200:
                text = (await resp.text())[:200]
                return Completion(ok=False, error=f"HTTP {resp.status}: {text}")
            doc = await resp.json(content_type=None)
    except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
        return Completion(ok=False, error=f"{type(exc).__name__}: {exc}")
    return _completion(doc, time.perf_counter() - start)


async def generate_all(
    url: str,
    payloads: list[dict[str, Any]],
    concurrency: int,
    read_timeout: float,
    on_done: Callable[[int], None] = lambda _n: None,
) -> Batch:
    """Every payload, at most `concurrency` in flight, results in payload order; `on_done`
    gets the count finished so far after each."""
    gate = asyncio.Semaphore(max(1, concurrency))
    timeout = aiohttp.ClientTimeout(total=None, sock_read=read_timeout)
    async with aiohttp.ClientSession(timeout=timeout) as session:

        async def gated(payload: dict[str, Any]) -> Completion:
            async with gate:
                result = await _one(session, url, payload)
            finished.append(result)
            on_done(len(finished))
            return result

        finished: list[Completion] = []

        start = time.perf_counter()
        results = await asyncio.gather(*(gated(p) for p in payloads))
        return Batch(list(results), time.perf_counter() - start)


def run_batch(
    url: str,
    payloads: list[dict[str, Any]],
    concurrency: int,
    read_timeout: float,
    on_done: Callable[[int], None] = lambda _n: None,
) -> Batch:
    return measure(generate_all(url, payloads, concurrency, read_timeout, on_done))
