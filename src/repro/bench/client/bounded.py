"""One bounded reader for every whole response a server sends (everything but the measured
stream): `/server_info`, `/flush_cache`, `/metrics`, the simulator's clock and power, and
accept's non-streaming `/generate`.

A server decides what it sends, so every read has three bounds, each a `Refused` with the
bound named when broken: its size after decompression (a 1 MB gzip body that inflates to 1 GiB
stops at the bound, inflated piece by piece as it comes), its JSON nesting depth (a deeply
nested document would otherwise end in a RecursionError here or when the record is written),
and its time (the whole response, however steadily the bytes trickle). Redirects are never
followed: the status and `Location` come back for the caller to refuse.
"""

from __future__ import annotations

import asyncio
import zlib
from dataclasses import dataclass
from typing import Any

import msgspec

from repro.bench.client.http1 import Connection, Pool, ProtocolError

MAX_DEPTH = 32
"""Nesting of a JSON document at most (SGLang's `/server_info` nests 4 deep)."""
_INFLATE = {b"gzip": 47, b"x-gzip": 47, b"deflate": 47}  # zlib: gzip or zlib header, detected


class Refused(Exception):
    """The response broke a bound (size, depth, time) or is not what was asked for."""


@dataclass(frozen=True)
class Bound:
    """What one response may be: `max_bytes` after decompression, within `timeout_s` (None:
    no time limit)."""

    max_bytes: int
    timeout_s: float | None


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes  # a 200's body, else the start of the error body
    location: str = ""  # a redirect's target (not followed)

    @property
    def redirect(self) -> bool:
        return 300 <= self.status < 400


class _Body:
    """The body callback: collects the bytes, inflating a compressed body, up to the bound."""

    def __init__(self, conn: Connection, limit: int) -> None:
        self.conn, self.limit = conn, limit
        self.parts: list[bytes] = []
        self.size = 0
        self.inflate: Any = None
        self.started = False

    def __call__(self, data: bytes) -> None:
        if not self.started:
            self.started = True
            encoding = self.conn.encoding
            if encoding in _INFLATE:
                self.inflate = zlib.decompressobj(_INFLATE[encoding])
            elif encoding not in (b"", b"identity"):
                raise Refused(f"a body in an encoding not asked for ({encoding.decode('latin-1')})")
        room = self.limit - self.size
        if self.inflate is not None:
            try:
                data = self.inflate.decompress(data, room + 1)
            except zlib.error as exc:
                raise Refused(f"a compressed body that does not inflate: {exc}") from None
        if len(data) > room:
            raise Refused(f"a response of over {self.limit} bytes")
        self.size += len(data)
        self.parts.append(data)


async def _exchange(pool: Pool, request: bytes, limit: int) -> Response:
    conn = await pool.acquire()
    try:
        body = _Body(conn, limit)
        _, done = conn.send(request, body)
        status = await done
        if status != 200:
            return Response(status, bytes(conn.error_body), conn.location.decode("latin-1"))
        return Response(status, b"".join(body.parts))
    finally:
        pool.release(conn)


async def fetch(pool: Pool, request: bytes, bound: Bound) -> Response:
    """Send `request` on a connection of `pool` and read its whole response within `bound`:
    `Refused` when it breaks the size or is malformed, TimeoutError when it is not whole in
    time, OSError (ConnectionError) when the server is not there or hangs up."""
    try:  # asyncio.timeout, not wait_for: 3.11's wait_for drops a cancel that meets the reply
        async with asyncio.timeout(bound.timeout_s):
            return await _exchange(pool, request, bound.max_bytes)
    except ProtocolError as exc:
        raise Refused(str(exc)) from None


def _too_deep(doc: Any, max_depth: int) -> bool:
    stack = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        if depth > max_depth:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def decode_json(body: bytes, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON document in `body`: strict JSON (no NaN or Infinity), at most `max_depth`
    deep; `Refused` otherwise."""
    try:
        doc = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise Refused(f"not a JSON document: {exc}") from None
    except RecursionError:
        raise Refused(f"a JSON document nested more than {max_depth} deep") from None
    if isinstance(doc, dict | list) and _too_deep(doc, max_depth):
        raise Refused(f"a JSON document nested more than {max_depth} deep")
    return doc
