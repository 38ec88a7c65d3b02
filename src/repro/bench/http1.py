"""A minimal HTTP/1.1 client connection for streaming responses, parsed inside the read callback.

Why not aiohttp for the stream: on SGLang's `/generate` stream (benchmarks/bench_client_cpu.py)
aiohttp's request machinery costs ~0.6 ms of client CPU per request and its body path (parser
callback, StreamReader buffer, one task wake-up per read) about as much per event as the
event's own parse. Here a request is one `transport.write` of a pre-built head and body; the
response head is parsed once, and every read of the body is de-chunked and handed to the
request's body callback synchronously in `data_received`, stamped with the read's time by the
callback itself. The request's task wakes once, when the response ends.

Scope: what SGLang's servers (uvicorn) and the simulator send: a status line and headers, then
a body framed by `Transfer-Encoding: chunked`, `Content-Length`, or the connection's close.
TLS through the loop's own; no redirects, no compression (none is asked for); a 1xx head is
skipped.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable

_MAX_HEAD = 64 * 1024


class ProtocolError(Exception):
    """The server's bytes are not an HTTP/1.1 response."""


class ServerDisconnected(ConnectionError):
    """The connection closed before the response ended."""


class Connection(asyncio.Protocol):
    """One keep-alive connection; one request at a time (`send`, then await `done`)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.done: asyncio.Future[int] | None = None
        self.on_body: Callable[[bytes], None] | None = None
        self.status = 0
        self.error_body = bytearray()  # the body of a response other than 200
        self.reusable = False
        self._head = b""
        self._in_head = False
        self._framing = ""  # "chunked" | "length" | "close"
        self._left = 0  # bytes of the current chunk (chunked) or of the body (length)
        self._skip = 0  # CRLF after a chunk's data still to skip
        self._pending = b""  # an incomplete chunk-size line
        self._trailer = False
        self._keep_alive = True

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.done is not None and not self.done.done():
            if not self._in_head and self._framing == "close":
                self._finish(reusable=False)
            else:
                self._fail(
                    ServerDisconnected(str(exc) if exc else "the server closed the connection")
                )

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def send(
        self, request: bytes, on_body: Callable[[bytes], None]
    ) -> tuple[float, asyncio.Future[int]]:
        """Write one request: the time its bytes went to the socket, and a future of the
        response's status, set when the response has ended."""
        assert self.transport is not None
        done = self.done = asyncio.get_running_loop().create_future()
        self.on_body = on_body
        self.status = 0
        self.error_body = bytearray()
        self.reusable = False
        self._head = b""
        self._in_head = True
        self._pending = b""
        self._trailer = False
        sent = time.perf_counter()
        self.transport.write(request)
        return sent, done

    def data_received(self, data: bytes) -> None:
        if self.done is None or self.done.done():
            return  # after an abandoned response: the connection is not reused
        try:
            if self._in_head:
                data = self._read_head(data)
                if self._in_head or self.done.done():
                    return
            if self._framing == "chunked":
                self._read_chunked(data)
            elif self._framing == "length":
                self._read_length(data)
            elif data:
                self._body(data)
        except Exception as exc:  # a malformed response or a failing body callback
            self._fail(exc)

    def _read_head(self, data: bytes) -> bytes:
        head = self._head + data
        end = head.find(b"\r\n\r\n")
        if end < 0:
            if len(head) > _MAX_HEAD:
                raise ProtocolError("response head too long")
            self._head = head
            return b""
        lines = head[:end].split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise ProtocolError(f"not an HTTP/1.1 status line: {lines[0][:80]!r}")
        rest = head[end + 4 :]
        status = int(parts[1])
        if 100 <= status < 200:  # an interim head: the real one follows
            self._head = b""
            return self._read_head(rest) if rest else b""
        self.status = status
        if status != 200:
            self.on_body = self.error_body.extend
        self._in_head = False
        self._keep_alive = parts[0] == b"HTTP/1.1"
        self._framing = "close"
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name, value = name.strip().lower(), value.strip().lower()
            if name == b"transfer-encoding" and value.endswith(b"chunked"):
                self._framing = "chunked"
                self._left = self._skip = 0
            elif name == b"content-length" and self._framing != "chunked":
                self._framing = "length"
                self._left = int(value)
            elif name == b"connection":
                self._keep_alive = value != b"close"
        if self._framing == "length" and self._left == 0:
            self._finish(reusable=self._keep_alive and not rest)
        return rest

    def _read_length(self, data: bytes) -> None:
        if len(data) >= self._left:
            body, extra = data[: self._left], data[self._left :]
            self._left = 0
            if body:
                self._body(body)
            self._finish(reusable=self._keep_alive and not extra)
        else:
            self._left -= len(data)
            self._body(data)

    def _read_chunked(self, data: bytes) -> None:
        if self._trailer:
            self._end_trailer(self._pending + data)
            return
        if self._pending:
            data = self._pending + data
            self._pending = b""
        size = len(data)
        left = self._left
        parts: list[bytes] = []
        pos = 0
        while pos < size:
            if left:  # inside a chunk's data
                end = pos + left
                if end <= size:
                    parts.append(data[pos:end])
                    pos, left, self._skip = end, 0, 2
                else:
                    parts.append(data[pos:])
                    left -= size - pos
                    pos = size
            elif self._skip:
                step = min(self._skip, size - pos)
                pos += step
                self._skip -= step
            else:
                nl = data.find(b"\r\n", pos)
                if nl < 0:
                    self._pending = data[pos:]
                    break
                left = int(data[pos:nl].partition(b";")[0], 16)
                pos = nl + 2
                if left == 0:  # the last chunk; then trailers and a blank line
                    self._left = 0
                    if parts:
                        self._body(parts[0] if len(parts) == 1 else b"".join(parts))
                    self._trailer = True
                    self._end_trailer(data[pos:])
                    return
        self._left = left
        if parts:
            self._body(parts[0] if len(parts) == 1 else b"".join(parts))

    def _end_trailer(self, data: bytes) -> None:
        if data.startswith(b"\r\n"):
            self._finish(reusable=self._keep_alive and len(data) == 2)
        elif (end := data.find(b"\r\n\r\n")) >= 0:
            self._finish(reusable=self._keep_alive and len(data) == end + 4)
        else:
            self._pending = data

    def _body(self, data: bytes) -> None:
        if self.on_body is not None:
            self.on_body(data)

    def _finish(self, *, reusable: bool) -> None:
        self.reusable = reusable and not self.closed
        if self.done is not None and not self.done.done():
            self.done.set_result(self.status)

    def _fail(self, exc: BaseException) -> None:
        self.reusable = False
        if self.done is not None and not self.done.done():
            self.done.set_exception(exc)


class Pool:
    """Idle keep-alive connections to one host, opened on demand, without limit."""

    def __init__(
        self, host: str, port: int, connect_timeout: float, tls: ssl.SSLContext | None = None
    ) -> None:
        self.host, self.port, self.connect_timeout, self.tls = host, port, connect_timeout, tls
        self._idle: list[Connection] = []
        self._open: set[Connection] = set()

    async def acquire(self) -> Connection:
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed:
                return conn
            self._open.discard(conn)
        loop = asyncio.get_running_loop()
        _, conn = await asyncio.wait_for(
            loop.create_connection(Connection, self.host, self.port, ssl=self.tls),
            self.connect_timeout,
        )
        self._open.add(conn)
        return conn

    def release(self, conn: Connection) -> None:
        """Back to the pool after a complete response; closed if it cannot carry another."""
        if conn.reusable and not conn.closed:
            conn.done = None
            conn.on_body = None
            self._idle.append(conn)
        else:
            conn.close()
            self._open.discard(conn)

    def close(self) -> None:
        for conn in self._open:
            conn.close()
        self._open.clear()
        self._idle.clear()
