"""A minimal HTTP/1.1 client connection for streaming responses, framed by llhttp.

Why not aiohttp for the stream: on SGLang's `/generate` stream (benchmarks/bench_client_cpu.py)
aiohttp's request machinery costs ~0.6 ms of client CPU per request and its body path (parser
callback, StreamReader buffer, one task wake-up per read) about as much per event as the
event's own parse. Here a request is one `transport.write` of a pre-built head and body; the
response is framed by `httptools` (the binding of llhttp, Node's parser, that uvicorn uses:
~4x less CPU per chunk than the hand-written de-chunking it replaced, and strict: a
`Content-Length: abc`, a chunk size `zz` or a bad status line is a `ProtocolError`), and
every read's body bytes are handed to the request's body callback synchronously in
`data_received`, once per read, stamped with the read's time by the callback itself. The
request's task wakes once, when the response ends.

Scope: what SGLang's servers (uvicorn) and the simulator send: a status line and headers, then
a body framed by `Transfer-Encoding: chunked`, `Content-Length`, or the connection's close.
TLS through the loop's own; a 1xx head is skipped. A redirect is never followed (its
`Location` is kept for the error message) and nothing is decompressed here: the body comes as
sent, its `Content-Encoding` kept for repro.bench.client.bounded, which inflates it within its
bound. A connection the server closed is never written to: the request fails as
`ServerDisconnected`.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable

import httptools

MAX_HEAD = 64 * 1024
"""Bytes of a response head (status line and headers) before it counts as malformed."""
MAX_ERROR_BODY = 64 * 1024
"""Bytes kept of the body of a response other than 200 (the rest is read and dropped)."""
MAX_LOCATION = 512
"""Bytes kept of a redirect's `Location` (shown, never followed)."""


class ProtocolError(Exception):
    """The server's bytes are not an HTTP/1.1 response (or not the stream asked for)."""


class ServerDisconnected(ConnectionError):
    """The connection closed before the response ended."""


class Connection(asyncio.Protocol):
    """One keep-alive connection; one request at a time (`send`, then await `done`)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.done: asyncio.Future[int] | None = None
        self.deliver: Callable[[bytes], None] | None = None  # the request's body callback
        self.status = 0
        self.error_body = bytearray()  # the start of the body of a response other than 200
        self.encoding = b""  # the response's Content-Encoding, lower case
        self.location = b""  # the response's Location (of a redirect, never followed)
        self.reusable = False
        self._parser: httptools.HttpResponseParser | None = None
        self._parts: list[bytes] = []
        self._head_bytes = 0
        self._in_head = False
        self._framed = False  # Content-Length or Transfer-Encoding given: not close-delimited
        self._complete = False
        self._keeps_alive = False
        self._extra = False  # bytes after the response: the connection is not reused

    # ---- asyncio.Protocol -----------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.done is not None and not self.done.done():
            if not self._in_head and not self._framed:  # the close ends the body
                self._finish(reusable=False)
            else:
                self._fail(
                    ServerDisconnected(str(exc) if exc else "the server closed the connection")
                )

    def data_received(self, data: bytes) -> None:
        if self.done is None or self.done.done() or self._parser is None:
            return  # after an abandoned response: the connection is not reused
        try:
            if self._in_head:
                self._head_bytes += len(data)
            try:
                self._parser.feed_data(data)
            except httptools.HttpParserUpgrade:
                raise ProtocolError("the server switched protocols") from None
            except httptools.HttpParserError as exc:
                if not self._complete:
                    raise ProtocolError(f"malformed HTTP response: {exc}") from None
                self._extra = True  # junk after a complete response
            if self._in_head and self._head_bytes > MAX_HEAD:
                raise ProtocolError(f"the response head is over {MAX_HEAD} bytes")
            parts = self._parts
            if parts:
                body = parts[0] if len(parts) == 1 else b"".join(parts)
                parts.clear()
                if self.deliver is not None:
                    self.deliver(body)
            if self._complete:
                self._finish(reusable=self._keep_alive())
        except Exception as exc:  # a malformed response or a failing body callback
            self._fail(exc)

    # ---- httptools callbacks ----------------------------------------------------------------
    def on_message_begin(self) -> None:
        if self._complete:
            self._extra = True

    def on_header(self, name: bytes, value: bytes) -> None:
        key = name.lower()
        if key in (b"content-length", b"transfer-encoding"):
            self._framed = True
        elif key == b"content-encoding":
            self.encoding = value.strip().lower()
        elif key == b"location":
            self.location = value[:MAX_LOCATION]

    def on_headers_complete(self) -> None:
        assert self._parser is not None
        status = self._parser.get_status_code()
        if 100 <= status < 200:  # an interim head: the real one follows
            self._framed = False
            return
        self.status = status
        self._in_head = False
        if status in (204, 304):
            self._framed = True  # no body, whatever the headers say
        if status != 200:
            self.deliver = self._keep_error

    def on_body(self, body: bytes) -> None:
        self._parts.append(body)

    def on_message_complete(self) -> None:
        if not self._in_head and not self._complete:
            self._complete = True
            # read here: llhttp resets its flags once the callback returns
            assert self._parser is not None
            self._keeps_alive = self._parser.should_keep_alive()

    # ---- requests ---------------------------------------------------------------------------
    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def is_usable(self) -> bool:
        return not self.closed and self.transport is not None and not self.transport.is_closing()

    def send(
        self, request: bytes, on_body: Callable[[bytes], None]
    ) -> tuple[float, asyncio.Future[int]]:
        """Write one request: the time its bytes went to the socket, and a future of the
        response's status, set when the response has ended."""
        if not self.is_usable():
            raise ServerDisconnected("the server closed the connection before the request")
        assert self.transport is not None
        done = self.done = asyncio.get_running_loop().create_future()
        self.deliver = on_body
        self.status = 0
        self.error_body = bytearray()
        self.encoding = self.location = b""
        self.reusable = False
        self._parser = httptools.HttpResponseParser(self)
        self._parts = []
        self._head_bytes = 0
        self._in_head = True
        self._framed = self._complete = self._extra = False
        sent = time.perf_counter()
        try:
            self.transport.write(request)
        except RuntimeError as exc:  # uvloop: "unable to perform operation ... closed"
            self.closed = True
            raise ServerDisconnected(f"the connection closed before the request: {exc}") from None
        return sent, done

    def _keep_error(self, data: bytes) -> None:
        room = MAX_ERROR_BODY - len(self.error_body)
        if room > 0:
            self.error_body += data[:room]

    def _keep_alive(self) -> bool:
        return self._keeps_alive and not self._extra

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
        """An idle connection the server has not closed, else a new one."""
        while self._idle:
            conn = self._idle.pop()
            if conn.is_usable():
                return conn
            conn.close()
            self._open.discard(conn)
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(self.connect_timeout):  # not wait_for: see bounded.fetch
            _, conn = await loop.create_connection(Connection, self.host, self.port, ssl=self.tls)
        self._open.add(conn)
        return conn

    def release(self, conn: Connection) -> None:
        """Back to the pool after a complete response; closed if it cannot carry another."""
        if conn.reusable and conn.is_usable():
            conn.done = None
            conn.deliver = None
            self._idle.append(conn)
        else:
            conn.close()
            self._open.discard(conn)

    def close(self) -> None:
        for conn in self._open:
            conn.close()
        self._open.clear()
        self._idle.clear()
