"""Talking to a server, outside the measured stream: one `ServerSession` per run, on repro's
own HTTP/1.1 client (repro.bench.client.http1), keep-alive connections reused across calls.

Endpoints (srt/entrypoints/http_server.py): `/server_info` (newer) or `/get_server_info`
(older) returns the server args plus `internal_states`; `/flush_cache` (GET or POST) empties
the radix cache and fails while requests are running; `/metrics` (with `--enable-metrics`);
`/generate` non-streaming (accept's requests); and the simulator's `/repro_sim/clock` and
`/repro_sim/power` (sim/clock.py, sim/power.py; a real SGLang answers 404).

Every response is read through repro.bench.client.bounded (size after decompression, JSON
depth, time); no redirect is followed. Once `pin` has recorded what the server runs, every
later `/server_info` read is checked against it: a server that starts reporting another model
mid-run raises `ServerChanged`.

The session serves whatever event loop calls it: a sync step (`call`) runs one coroutine on
a loop of its own and closes the connections it opened; the sweep's loop opens its own.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar
from urllib.parse import urlsplit

from pydantic import ValidationError

from repro.bench.client.bounded import Bound, Refused, Response, decode_json, fetch
from repro.bench.client.http1 import Pool
from repro.bench.client.stream import measure
from repro.bench.identity import found_identity
from repro.errors import ReproError
from repro.schema.serverinfo import ServerInfo
from repro.schema.validation import first_problem

T = TypeVar("T")

INFO_TIMEOUT_S = 30.0
INFO = Bound(max_bytes=4 * 1024 * 1024, timeout_s=INFO_TIMEOUT_S)
"""`/server_info` and `/flush_cache` (SGLang's report is tens of kB)."""
METRICS = Bound(max_bytes=8 * 1024 * 1024, timeout_s=10.0)
"""One `/metrics` page (SGLang's, histograms included, is a few hundred kB)."""
SIM = Bound(max_bytes=64 * 1024, timeout_s=5.0)
"""The simulator's clock and power readings (a few numbers)."""


class ServerChanged(ReproError):
    """`/server_info` reports another deployment than the one the run checked."""


def unreachable(url: str, exc: BaseException, timeout_s: float = INFO_TIMEOUT_S) -> ReproError:
    if isinstance(exc, TimeoutError):  # it took the connection and then kept silent
        return ReproError(
            f"the server at {url} did not answer within {timeout_s:.0f} s",
            hint="is it stuck? check its log (`repro logs RECIPE`), or point --url at another",
        )
    return ReproError(
        f"cannot reach the server at {url}: {str(exc) or type(exc).__name__}",
        hint="start it first (`repro launch RECIPE`) or point at a running one with --url",
    )


def _redirected(url: str, path: str, response: Response) -> ReproError:
    return ReproError(
        f"{url}{path} answered with a redirect (HTTP {response.status} to "
        f"{response.location or '?'}): repro measures only the server it checked",
        hint="point --url at the server itself",
    )


class ServerSession:
    """Every call repro makes to one server outside the measured stream."""

    def __init__(self, url: str, connect_timeout: float = 10.0) -> None:
        self.url = url.rstrip("/")
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ReproError(f"not an http(s) URL: {self.url}", hint="e.g. http://127.0.0.1:30000")
        self._prefix = parts.path.rstrip("/")
        self._host = parts.netloc
        port = parts.port or (443 if parts.scheme == "https" else 80)
        tls = ssl.create_default_context() if parts.scheme == "https" else None
        self._pool_args = (parts.hostname, port, connect_timeout, tls)
        self._pool: Pool | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.identity: dict[str, Any] | None = None

    # ---- the connections ----------------------------------------------------------------
    def _pool_now(self) -> Pool:
        loop = asyncio.get_running_loop()
        if self._pool is None or self._loop is not loop:
            self.close()
            self._pool, self._loop = Pool(*self._pool_args), loop
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
        self._pool = self._loop = None

    def call(self, main: Coroutine[Any, Any, T]) -> T:
        """Run one call from synchronous code, on a loop of its own."""

        async def once() -> T:
            try:
                return await main
            finally:
                self.close()

        return measure(once())

    def _request(self, method: str, path: str, body: bytes = b"") -> bytes:
        head = f"{method} {self._prefix}{path} HTTP/1.1\r\nHost: {self._host}\r\nAccept: */*\r\n"
        if method == "POST":
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        return (head + "\r\n").encode() + body

    async def send(self, method: str, path: str, bound: Bound, body: bytes = b"") -> Response:
        """One request, its whole response within `bound` (`Refused` when it breaks it)."""
        return await fetch(self._pool_now(), self._request(method, path, body), bound)

    # ---- server info ---------------------------------------------------------------------
    def pin(self, info: ServerInfo) -> None:
        """What the server runs now: every later `server_info` must report the same."""
        self.identity = found_identity(info)

    async def server_info(self) -> ServerInfo:
        """`/server_info`, else `/get_server_info`, typed; ReproError when there is no SGLang,
        it reports fields of the wrong type, breaks a bound or redirects; `ServerChanged` when
        it reports another deployment than the one pinned."""
        statuses: list[str] = []
        for path in ("/server_info", "/get_server_info"):
            try:
                response = await self.send("GET", path, INFO)
                if response.redirect:
                    raise _redirected(self.url, path, response)
                if response.status != 200:
                    statuses.append(f"{path}: HTTP {response.status}")
                    continue
                doc = decode_json(response.body)
            except Refused as exc:
                raise ReproError(
                    f"{self.url}{path}: {exc}", hint="is this an SGLang server? point --url at one"
                ) from None
            except (OSError, TimeoutError) as exc:
                raise unreachable(self.url, exc) from None
            if isinstance(doc, dict):
                return self._checked(self._typed(path, doc))
            statuses.append(f"{path}: not a JSON object")
        raise ReproError(
            f"{self.url} does not look like an SGLang server ({'; '.join(statuses)})",
            hint="check the port: SGLang answers /server_info or /get_server_info; pass the "
            "right --url",
        )

    def _typed(self, path: str, doc: dict[str, Any]) -> ServerInfo:
        try:
            return ServerInfo.model_validate(doc)
        except ValidationError as err:
            raise ReproError(
                f"{self.url}{path}: {first_problem(err)}",
                hint="is this an SGLang server? point --url at one",
            ) from None

    def _checked(self, info: ServerInfo) -> ServerInfo:
        if self.identity is None:
            return info
        now = found_identity(info)
        for key, before in self.identity.items():
            if now.get(key) != before:
                raise ServerChanged(
                    f"the server at {self.url} changed during the run: it reported "
                    f"{key}={before}, now {key}={now.get(key)}",
                    hint="the finished levels and sets are kept; check what answers at the URL",
                )
        return info

    # ---- the other calls -----------------------------------------------------------------
    async def flush_cache(self) -> None:
        try:
            response = await self.send("POST", "/flush_cache", INFO)
        except Refused as exc:
            raise ReproError(f"{self.url}/flush_cache: {exc}") from None
        except (OSError, TimeoutError) as exc:
            raise unreachable(self.url, exc) from None
        if response.status != 200:
            body = response.body[:200].decode(errors="replace")
            raise ReproError(
                f"{self.url}/flush_cache failed: HTTP {response.status} {body}",
                hint="the cache can only be flushed while no request is running",
            )

    async def metrics_page(self) -> bytes | None:
        """One `/metrics` page; None when the server has none (404). A failed scrape (busy,
        gone, over the bound) raises `Refused` or OSError for the caller to skip."""
        response = await self.send("GET", "/metrics", METRICS)
        if response.status == 404:
            return None
        if response.status != 200:
            raise Refused(f"/metrics: HTTP {response.status}")
        return response.body

    async def sim_reading(self, what: str) -> dict[str, Any] | None:
        """The simulator's `/repro_sim/<what>` reading; None from a server without it (a real
        SGLang's 404), or one that does not answer. `Refused` when the server answers with
        something no simulator sends (non-JSON, NaN, over the bound)."""
        try:
            response = await self.send("GET", f"/repro_sim/{what}", SIM)
        except (OSError, TimeoutError):
            return None
        if response.status != 200:
            return None
        doc = decode_json(response.body)
        if not isinstance(doc, dict) or doc.get("simulated") is not True:
            return None
        return doc

    async def generate(self, payload: Mapping[str, object], bound: Bound) -> Response:
        """A non-streaming `/generate` (accept's requests), its whole response in `bound`."""
        return await self.send("POST", "/generate", bound, json.dumps(payload).encode())


def read_server_info(url: str) -> ServerInfo:
    """`/server_info` of the server at `url`, from synchronous code (one call, one session)."""
    session = ServerSession(url)
    return session.call(session.server_info())
