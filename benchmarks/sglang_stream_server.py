"""A stand-in for SGLang 0.5.23's `/generate` stream, byte for byte in shape, with a fixed step.

Run as `python benchmarks/sglang_stream_server.py PORT TOKENS_PER_CHUNK [STEP_MS]` (by
benchmarks/bench_client_cpu.py). Every `STEP_MS` (10 by default, kept to within a pass of the
event loop) each open stream gets one chunk, as a batched decode step would send it: the first
chunk carries 1 token (prefill), each later one `TOKENS_PER_CHUNK` (a speculative server's
verify step), up to `max_new_tokens`.

What a chunk holds follows srt/managers/tokenizer_manager.py `_handle_batch_output` and
`_wait_one_response` without `--incremental-streaming-output` (the default): the cumulative
`text` and `output_ids`, then a full `meta_info` (`id`, `finish_reason`, `prompt_tokens`,
`weight_version`, `num_retractions`, `reasoning_tokens`, `completion_tokens`,
`cached_tokens`; `response_sent_to_client_ts` on the first chunk; `e2e_latency` and
`finish_reason: {"type": "length", "length": N}` on the last). srt/entrypoints/http_server.py
writes each as `data: <orjson>\\n\\n` and ends with `data: [DONE]\\n\\n`; uvicorn sends every
write as one HTTP/1.1 chunk of a `Transfer-Encoding: chunked` response.

Measurement (for the benchmark): `POST /_bench/watch` with a client's pid makes the server read
that process's CPU time (the sum of its threads' /proc/PID/task/*/schedstat run times, ns) at
the start and end of each busy period (first stream opened to 20 ms after the last one closed;
a thread that ends meanwhile keeps what it had used at the last step, see `Period`);
`GET /_bench/stats` returns the periods: streams, events, client CPU seconds (and user and
system ticks), and the median gap between consecutive chunks of a stream as the server wrote
them to the socket (also for the first and second half of a stream, and between the starts
of the steps that sent them).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any, cast

import msgspec

_TAIL_S = (
    0.02  # a busy period ends this long after its last stream, so the client's last reads count
)
_SPIN_S = 0.002
_WORDS = [" the", " model", " token", " of", " a", " stream", ",", " and", " é", " 42", "\\n"]
_encode = msgspec.json.Encoder().encode
_INFO = {
    "model_path": "bench",
    "tokenizer_path": "bench",
    "is_generation": True,
    "data": [{"id": "bench", "object": "model", "max_model_len": 4096}],
}


def _thread_cpu_ns(pid: int) -> dict[int, int]:
    """CPU time (ns) of each live thread of `pid`, from /proc/PID/task/*/schedstat."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):  # a thread that ended
            out[int(task.name)] = int((task / "schedstat").read_text().split()[0])
    return out


def _process_ticks(pid: int) -> tuple[int, int]:
    """User and system clock ticks of the whole process, threads that ended included."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])


class Period:
    """A busy period's client CPU: each thread's schedstat at the start, and the latest seen
    (sampled every step), so a thread that ends mid-period keeps what it used until the last
    sample; /proc/PID/stat's user and system ticks beside it (10 ms resolution)."""

    def __init__(self, pid: int | None) -> None:
        self.pid = pid
        self.start = _thread_cpu_ns(pid) if pid else {}
        self.seen = dict(self.start)
        self.ticks0 = _process_ticks(pid) if pid else (0, 0)
        self.streams = 0
        self.events = 0
        self.gaps: tuple[list[float], list[float]] = ([], [])  # first half of a stream, second
        self.step_gaps: list[float] = []

    def sample(self) -> None:
        if self.pid:
            self.seen.update(_thread_cpu_ns(self.pid))

    def close(self) -> dict[str, Any]:
        cpu_s = user_s = sys_s = 0.0
        if self.pid:
            self.sample()
            cpu_s = (sum(self.seen.values()) - sum(self.start.values())) / 1e9
            user, system = _process_ticks(self.pid)
            tick = os.sysconf("SC_CLK_TCK")
            user_s, sys_s = (user - self.ticks0[0]) / tick, (system - self.ticks0[1]) / tick
        early, late = self.gaps
        return {
            "streams": self.streams,
            "events": self.events,
            "client_cpu_s": cpu_s,
            "client_user_s": user_s,
            "client_sys_s": sys_s,
            "median_send_gap_ms": _median_ms(early + late),
            "median_send_gap_halves_ms": [_median_ms(early), _median_ms(late)],
            "median_step_gap_ms": _median_ms(self.step_gaps),
        }


async def _until(due: float) -> None:
    """Wait until `due` (a perf_counter time) to within a loop pass, so that the steps are as
    regular as the benchmark says: asyncio.sleep for all but the last `_SPIN_S` (uvloop's
    timers fire on whole milliseconds), then passes of the loop, which keep serving I/O."""
    delay = due - time.perf_counter() - _SPIN_S
    if delay > 0:
        await asyncio.sleep(delay)
    while time.perf_counter() < due:
        await asyncio.sleep(0)


def _median_ms(values: list[float]) -> float:
    return float(sorted(values)[len(values) // 2]) * 1e3 if values else 0.0


class Server:
    def __init__(self, per_chunk: int, step_s: float) -> None:
        self.per_chunk, self.step_s = per_chunk, step_s
        rng = random.Random(0)
        words = [rng.choice(_WORDS) for _ in range(8192)]
        ids = [str(rng.randrange(150_000)) for _ in range(8192)]
        # cumulative text/ids prefixes as JSON fragments, shared by every stream
        self.text = [b""] + ["".join(words[:n]).encode() for n in range(1, 8193)]
        self.ids = [b""] + [",".join(ids[:n]).encode() for n in range(1, 8193)]
        self.streams: list[Stream] = []
        self.pid: int | None = None
        self.period: Period | None = None
        self.closing: asyncio.TimerHandle | None = None
        self.done: list[dict[str, Any]] = []
        self.wake = asyncio.Event()

    def open(self, stream: Stream) -> None:
        if self.closing is not None:
            self.closing.cancel()
            self.closing = None
        if self.period is None:
            self.period = Period(self.pid)
        self.period.streams += 1
        self.streams.append(stream)
        self.wake.set()

    def _close_period(self) -> None:
        self.closing = None
        if self.period is not None:
            self.done.append(self.period.close())
            self.period = None

    async def steps(self) -> None:
        loop = asyncio.get_running_loop()
        due = time.perf_counter()
        while True:
            if not self.streams:
                self.wake.clear()
                await self.wake.wait()
                due = time.perf_counter()
            now = time.perf_counter()
            for stream in self.streams:
                stream.step(now)
            self.streams = [s for s in self.streams if not s.finished]
            if self.period is not None:
                self.period.sample()
            if not self.streams and self.closing is None:
                self.closing = loop.call_later(_TAIL_S, self._close_period)
            due += self.step_s
            await _until(due)


class Stream:
    __slots__ = (
        "conn",
        "finished",
        "last",
        "max_tokens",
        "prompt",
        "rid",
        "sent",
        "server",
        "start",
        "step_at",
    )

    def __init__(self, server: Server, conn: Conn, body: dict) -> None:
        self.server, self.conn = server, conn
        self.rid = body.get("rid") or os.urandom(16).hex()
        self.max_tokens = int(body.get("sampling_params", {}).get("max_new_tokens", 256))
        prompt = body.get("input_ids") or body.get("text") or ""
        self.prompt = len(prompt) if isinstance(prompt, list) else len(str(prompt).split())
        self.sent = 0
        self.last = self.step_at = 0.0
        self.finished = False
        self.start = time.perf_counter()

    def step(self, now: float) -> None:
        server = self.server
        n = min(self.max_tokens, self.sent + (server.per_chunk if self.sent else 1))
        final = n == self.max_tokens
        meta: dict = {
            "id": self.rid,
            "finish_reason": {"type": "length", "length": n} if final else None,
            "prompt_tokens": self.prompt,
            "weight_version": "default",
            "num_retractions": 0,
            "reasoning_tokens": 0,
            "completion_tokens": n,
            "cached_tokens": 0,
        }
        if final:
            meta["e2e_latency"] = now - self.start
        if not self.sent:
            meta["response_sent_to_client_ts"] = time.time()
        event = b'data: {"text":"%s","output_ids":[%s],"meta_info":%s}\n\n' % (
            server.text[n],
            server.ids[n],
            _encode(meta),
        )
        out = b"%x\r\n%s\r\n" % (len(event), event)
        if final:
            out += b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"
        sent = time.perf_counter()
        self.conn.transport.write(out)
        period = server.period
        if period is not None:
            period.events += 1
            if self.sent:
                period.gaps[2 * n > self.max_tokens].append(sent - self.last)
                period.step_gaps.append(now - self.step_at)
        self.last, self.step_at = sent, now
        self.sent = n
        self.finished = final


def _response(status: str, body: bytes) -> bytes:
    return b"HTTP/1.1 %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (
        status.encode(),
        len(body),
        body,
    )


class Conn(asyncio.Protocol):
    def __init__(self, server: Server) -> None:
        self.server = server
        self.buf = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while (head_end := self.buf.find(b"\r\n\r\n")) >= 0:
            lines = self.buf[:head_end].split(b"\r\n")
            length = 0
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(self.buf) < head_end + 4 + length:
                return
            body = self.buf[head_end + 4 : head_end + 4 + length]
            self.buf = self.buf[head_end + 4 + length :]
            self.handle(lines[0].split(b" ")[:2], body)

    def handle(self, request: list[bytes], body: bytes) -> None:
        method, path = request[0], request[1].split(b"?")[0]
        server = self.server
        if method == b"POST" and path == b"/generate":
            self.transport.write(
                b"HTTP/1.1 200 OK\r\nserver: uvicorn\r\n"
                b"content-type: text/event-stream; charset=utf-8\r\n"
                b"transfer-encoding: chunked\r\n\r\n"
            )
            server.open(Stream(server, self, json.loads(body or b"{}")))
        elif path == b"/_bench/watch":
            server.pid = int(json.loads(body)["pid"])
            server.done.clear()
            self.transport.write(_response("200 OK", b"{}"))
        elif path == b"/_bench/stats":
            self.transport.write(_response("200 OK", _encode(server.done)))
        else:  # model info, server info, health, flush_cache: what the clients ask before a run
            self.transport.write(_response("200 OK", _encode(_INFO)))


async def serve(port: int, per_chunk: int, step_s: float) -> None:
    server = Server(per_chunk, step_s)
    loop = asyncio.get_running_loop()
    await loop.create_server(lambda: Conn(server), "127.0.0.1", port, backlog=4096)
    await server.steps()


if __name__ == "__main__":
    try:  # the loop SGLang's server runs on; plain asyncio where it is not installed
        import uvloop

        run = uvloop.run
    except ImportError:
        run = asyncio.run
    step = float(sys.argv[3]) / 1e3 if len(sys.argv) > 3 else 0.01
    run(serve(int(sys.argv[1]), int(sys.argv[2]), step))
