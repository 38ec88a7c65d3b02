"""The streaming load generator: keep-alive connections (repro.bench.client.http1), closed-loop
concurrency or open-loop arrivals at offered send times (repro.bench.arrivals), and per-event
arrival times taken as the bytes come off the socket.

What it measures mirrors sglang/benchmark/serving.py (SGLang 0.5.23,
`async_request_sglang_generate`, `async_request_openai_chat_completions`): TTFT = first chunk
carrying tokens, E2E = end of stream, TPOT = (E2E - TTFT) / (completion_tokens - 1). Each gap
between token-carrying events is kept with the new tokens its event carried (`chunk_gap_s`,
`chunk_tokens`), from which metrics.py derives bench_serving's per-token ITL; several events
in one socket read get the same time (a gap of 0). On the chat endpoint the tokens per event
come from `usage` on every chunk (`stream_options.continuous_usage_stats`), else 1 per event.

A request ends by itself, whatever the server does: `ClientLimits` bound the silence
(`read_timeout`), the request's whole time (`request_timeout`) and the bytes of one SSE
event (`max_event_bytes`); malformed HTTP or SSE, a value no server can send
(repro.bench.client.readers) and a closed connection each fail the request with an `error_kind`
(`timeout`, `protocol`, `implausible`, `disconnected`), never an exception.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import msgspec
import uvloop

from repro.bench.client.http1 import Connection, Pool, ProtocolError
from repro.bench.client.readers import (
    Bounds,
    ChatReader,
    EventReader,
    GenerateReader,
    Implausible,
    StreamStopped,
)
from repro.bench.client.result import RequestResult
from repro.bench.client.tasks import stop_task
from repro.bench.client.wire import MAX_COUNT, MAX_EVENT_BYTES, EventTooLarge
from repro.interrupts import run_event_loop
from repro.schema.record import ClientLimits, Endpoint

T = TypeVar("T")
PATHS: dict[str, str] = {"generate": "/generate", "chat": "/v1/chat/completions"}


@dataclass
class LevelRun:
    """The results of one batch of requests and its wall time (first start to last end).

    `t0` is the `time.perf_counter()` the requests' `start_s` count from, so a request's
    arrival times are `t0 + start_s + ttft_s (+ the ITL gaps so far)`.
    """

    results: list[RequestResult]
    duration: float
    t0: float = 0.0


def measure(main: Coroutine[Any, Any, T]) -> T:
    """Run a measurement on uvloop (the loop SGLang's own server runs on, http_server.py).

    Its I/O callbacks run as the poll returns instead of queueing behind other ready work: in
    benchmarks/bench_client.py (256 streams) the median delay from the server's write to the
    client's read falls from ~0.07 to ~0.04 ms, and for a stream's first event from ~0.15-0.3
    to ~0.05-0.1 ms, which is the error in TTFT. Ctrl-C and SIGTERM stop it between two
    callbacks (repro.interrupts).
    """
    return run_event_loop(main, uvloop.run)


def _describe(exc: BaseException) -> tuple[str, str]:
    if isinstance(exc, asyncio.TimeoutError):
        return "timeout", f"no connection within the connect timeout ({type(exc).__name__})"
    if isinstance(exc, ConnectionError):
        return "disconnected", str(exc) or type(exc).__name__
    if isinstance(exc, msgspec.ValidationError):  # a negative, huge or non-numeric count
        return "implausible", f"a value no server can send: {exc}"
    if isinstance(exc, msgspec.DecodeError):
        return "protocol", f"undecodable stream chunk: {exc}"
    if isinstance(exc, Implausible):
        return "implausible", f"a value no server can send: {exc}"
    if isinstance(exc, ProtocolError | EventTooLarge):
        return "protocol", str(exc)
    if isinstance(exc, OSError):
        return "client", str(exc) or type(exc).__name__
    raise exc


class _Live:
    """A request in flight: when it began (its deadline counts from there), when its bytes
    left (`Connection.send`, the start of its TTFT and E2E) and, for the watchdog, when its
    last bytes arrived and why the watchdog stopped it."""

    __slots__ = ("began", "last", "sent", "stalled", "task")

    def __init__(self, task: asyncio.Task[Any] | None, now: float) -> None:
        self.task = task
        self.began = self.last = self.sent = now
        self.stalled: str | None = None


def _finite_positive(value: float) -> bool:
    return 0 < value < float("inf")


class StreamClient:
    """Async context manager holding a pool of keep-alive connections (repro.bench.client.http1),
    as many as requests in flight.

    The read timeout (no byte for `read_timeout` seconds, before the headers or mid-stream)
    and the request timeout (`request_timeout` seconds from the request's start, however
    steadily bytes come) are enforced by one watchdog task that looks at every request in
    flight `_WATCH_STEPS` times per the shorter of the two, not by timers re-armed on every
    socket read: a limit is caught between itself and `1 + 1/_WATCH_STEPS` times the shorter.
    A timeout of 0 (or less, or infinite) is no limit.
    """

    _WATCH_STEPS = 10

    def __init__(
        self,
        base_url: str,
        endpoint: Endpoint = "generate",
        *,
        read_timeout: float = 300.0,
        request_timeout: float = 0.0,
        max_event_bytes: int = MAX_EVENT_BYTES,
        connect_timeout: float = 10.0,
        max_accept: float = MAX_COUNT,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.endpoint: Endpoint = endpoint
        self.url = self.base_url + PATHS[endpoint]
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {self.url}")
        self._head = (
            f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            "Content-Type: application/json\r\nAccept: */*\r\nContent-Length: "
        ).encode()
        port = parts.port or (443 if parts.scheme == "https" else 80)
        tls = ssl.create_default_context() if parts.scheme == "https" else None
        self._pool_args = (parts.hostname, port, connect_timeout, tls)
        self.read_timeout = read_timeout
        self.request_timeout = request_timeout
        self.max_event_bytes = max_event_bytes
        self.max_accept = max_accept  # tokens one verify step can commit on this server
        self._pool: Pool | None = None
        self._live: set[_Live] = set()
        self._watchdog: asyncio.Task[None] | None = None

    @classmethod
    def limited(
        cls, base_url: str, endpoint: Endpoint, limits: ClientLimits, max_accept: float = MAX_COUNT
    ) -> StreamClient:
        return cls(
            base_url,
            endpoint,
            read_timeout=limits.read_timeout_s,
            request_timeout=limits.request_timeout_s,
            max_event_bytes=limits.max_event_bytes,
            max_accept=max_accept,
        )

    async def __aenter__(self) -> StreamClient:
        self._pool = Pool(*self._pool_args)
        if _finite_positive(self.read_timeout) or _finite_positive(self.request_timeout):
            self._watchdog = asyncio.ensure_future(self._watch())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._watchdog is not None:
            watchdog, self._watchdog = self._watchdog, None
            await stop_task(watchdog)
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    async def _watch(self) -> None:
        inf = float("inf")
        read = self.read_timeout if _finite_positive(self.read_timeout) else inf
        total = self.request_timeout if _finite_positive(self.request_timeout) else inf
        while True:
            await asyncio.sleep(min(read, total) / self._WATCH_STEPS)
            now = time.perf_counter()
            for live in self._live:
                if live.stalled or live.task is None:
                    continue
                if now - live.last >= read:
                    live.stalled = f"no data for the read timeout ({read:g} s)"
                elif now - live.began >= total:
                    live.stalled = f"the request ran past the request timeout ({total:g} s)"
                else:
                    continue
                live.task.cancel()

    @property
    def pool(self) -> Pool:
        if self._pool is None:
            raise RuntimeError("StreamClient used outside `async with`")
        return self._pool

    async def request(
        self, body: bytes, result: RequestResult, t0: float, max_tokens: int | None = None
    ) -> RequestResult:
        """Send one streaming request and fill `result` (never raises for a failed request).

        `max_tokens` is the request's max_new_tokens: a server reporting more fails it."""
        live = _Live(asyncio.current_task(), time.perf_counter())
        self._live.add(live)
        pool = self.pool
        conn: Connection | None = None
        reader: EventReader = (GenerateReader if self.endpoint == "generate" else ChatReader)(
            result,
            0.0,
            live,
            Bounds.of_request(body, max_tokens, self.max_event_bytes, self.max_accept),
        )
        try:
            try:
                conn = await pool.acquire()
            except OSError as exc:
                result.error_kind, result.error = "connect", str(exc) or type(exc).__name__
                return result
            live.sent, done = conn.send(self._head + b"%d\r\n\r\n" % len(body) + body, reader.feed)
            reader.start = live.sent
            status = await done
            if status != 200:
                result.error_kind = f"http_{status}"
                result.error = conn.error_body.decode(errors="replace")[:500]
                return result
            if isinstance(reader, GenerateReader):
                reader.counts()
            elif result.completion_tokens == 0:
                result.completion_tokens = reader.last_tokens
            reader.check_counts()
            self._finish(result, reader.done)
        except StreamStopped:
            pass  # the server's error is in the result
        except asyncio.CancelledError:
            task = live.task
            if live.stalled is None or task is None or task.uncancel() > 0:
                raise
            result.ok = False
            result.error_kind, result.error = "timeout", live.stalled
        except (
            TimeoutError, OSError, ProtocolError, EventTooLarge, Implausible, msgspec.MsgspecError
        ) as exc:  # fmt: skip
            result.error_kind, result.error = _describe(exc)
            result.ok = False
        finally:
            if isinstance(reader, GenerateReader) and not result.ok:
                reader.counts()
            if conn is not None:
                pool.release(conn)
            self._live.discard(live)
            result.start_s = live.sent - t0
        return result

    @staticmethod
    def _finish(result: RequestResult, done: bool) -> None:
        if not done:
            result.error_kind = "incomplete"
            result.error = "the stream ended before `data: [DONE]`"
        elif result.ttft_s is None and result.completion_tokens > 0:
            result.error_kind = "protocol"
            result.error = "no chunk carried tokens"
        else:
            result.ok = True

    async def run(
        self,
        bodies: Sequence[bytes],
        concurrency: int,
        *,
        repeat: int = 0,
        schedule: Sequence[float] | None = None,
        on_done: Callable[[RequestResult], None] | None = None,
        max_tokens: int | None = None,
    ) -> LevelRun:
        """Send every body with at most `concurrency` in flight (each asking for at most
        `max_tokens` tokens, when given).

        Closed loop (no `schedule`): a new request starts as soon as one finishes. Open loop:
        body i is offered at `schedule[i]` s from the level's start (ascending; still capped
        at `concurrency` in flight, as bench_serving's --max-concurrency: a request over the
        cap waits, and sends late); each result keeps its `offered_s` beside its `start_s`.
        """
        if schedule is not None and len(schedule) != len(bodies):
            raise ValueError(f"{len(schedule)} send times for {len(bodies)} requests")
        sem = asyncio.Semaphore(concurrency)
        results = [RequestResult(concurrency, repeat, i) for i in range(len(bodies))]
        tasks: list[asyncio.Task[None]] = []
        t0 = time.perf_counter()

        async def one(i: int) -> None:
            try:
                await self.request(bodies[i], results[i], t0, max_tokens)
            finally:
                sem.release()
            if on_done is not None:
                on_done(results[i])

        async def gated(i: int) -> None:
            await sem.acquire()
            await one(i)

        # After starting a request, yield once, so that it connects and writes its bytes
        # before the next starts: a burst of starts would otherwise hold every request's
        # bytes back until the last one had started (the server would get them all at once).
        if schedule is None:
            for i in range(len(bodies)):
                await sem.acquire()
                tasks.append(asyncio.ensure_future(one(i)))
                await asyncio.sleep(0)
        else:
            for i, offered in enumerate(schedule):
                results[i].offered_s = offered
                delay = t0 + offered - time.perf_counter()
                await asyncio.sleep(max(delay, 0.0))
                tasks.append(asyncio.ensure_future(gated(i)))
        if tasks:
            await asyncio.gather(*tasks)
        ends = [r.start_s + r.e2e_s for r in results if r.e2e_s is not None]
        duration = max(ends) if ends else time.perf_counter() - t0
        return LevelRun(results, duration, t0)
