"""Talking to the server outside the measured requests: is it there, is it SGLang, what does
it report about itself, flush its cache.

Endpoints (srt/entrypoints/http_server.py): `/server_info` (newer) or `/get_server_info`
(older) returns the server args plus `internal_states`; `/flush_cache` (GET or POST) empties
the radix cache and fails while requests are running; `/v1/models` lists the served model.
"""

from __future__ import annotations

from typing import Any

import aiohttp
from pydantic import ValidationError

from repro.errors import ReproError
from repro.schema.machine import ServerInfo
from repro.schema.record import first_error

_TIMEOUT = aiohttp.ClientTimeout(total=30)


def _unreachable(url: str, exc: BaseException) -> ReproError:
    if isinstance(exc, TimeoutError):  # it took the connection and then kept silent
        return ReproError(
            f"the server at {url} did not answer within {_TIMEOUT.total:.0f} s",
            hint="is it stuck? check its log (`repro logs RECIPE`), or point --url at another",
        )
    return ReproError(
        f"cannot reach the server at {url}: {str(exc) or type(exc).__name__}",
        hint="start it first (`repro launch RECIPE`) or point at a running one with --url",
    )


async def fetch_server_info(url: str) -> ServerInfo:
    """`/server_info`, else `/get_server_info`, typed; raises ReproError when there is no
    SGLang or it reports fields of the wrong type (one line, before any folder is made)."""
    base = url.rstrip("/")
    statuses: list[str] = []
    try:
        async with aiohttp.ClientSession(timeout=_TIMEOUT) as session:
            for path in ("/server_info", "/get_server_info"):
                async with session.get(base + path) as resp:
                    if resp.status == 200:
                        try:
                            info = await resp.json(content_type=None)
                        except ValueError:
                            info = None
                        if isinstance(info, dict):
                            return _typed(base + path, info)
                        statuses.append(f"{path}: not a JSON object")
                    else:
                        statuses.append(f"{path}: HTTP {resp.status}")
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        raise _unreachable(base, exc) from None
    raise ReproError(
        f"{base} does not look like an SGLang server ({'; '.join(statuses)})",
        hint="check the port: SGLang answers /server_info or /get_server_info; pass the right "
        "--url",
    )


def _typed(url: str, info: dict[str, Any]) -> ServerInfo:
    try:
        return ServerInfo.model_validate(info)
    except ValidationError as err:
        raise ReproError(
            f"{url}: {first_error(err)}", hint="is this an SGLang server? point --url at one"
        ) from None


def server_info_record(info: ServerInfo, **recorded: Any) -> ServerInfo:
    """What `server_info.json` records: the server's report plus `recorded` (what repro knows
    beside it: `simulated`, the running image), each marked as set so that it is written."""
    return info.model_copy(update=recorded)


def served_model(info: ServerInfo) -> str:
    for value in (info.served_model_name, info.model_path):
        if value:
            return value
    state = info.first_state
    return state.served_model_name if state and state.served_model_name is not None else "default"


def is_simulated(info: ServerInfo) -> bool:
    if info.simulated:
        return True
    state = info.first_state
    return bool(state and state.simulated)


def speculative_algorithm(info: ServerInfo) -> str | None:
    value = info.speculative_algorithm
    return value if value not in (None, "", "NONE") else None


def server_accept_length(info: ServerInfo) -> float | None:
    """bench_serving's `accept_length` (benchmark/serving.py): `avg_spec_accept_length` of
    `internal_states[0]` (DP rank 0, cumulative since start or the last flush); None when the
    server reports none or a value no verify step can give (a number, 0 to 1025 tokens)."""
    state = info.first_state
    value = state.avg_spec_accept_length if state else None
    return float(value) if value is not None and 0 <= value <= 1025 else None


async def fetch_server_accept_length(url: str) -> float | None:
    """The server's acceptance now (see server_accept_length); None when it does not answer."""
    try:
        return server_accept_length(await fetch_server_info(url))
    except ReproError:
        return None


async def flush_cache(url: str) -> None:
    base = url.rstrip("/")
    try:
        async with (
            aiohttp.ClientSession(timeout=_TIMEOUT) as session,
            session.post(base + "/flush_cache") as resp,
        ):
            if resp.status != 200:
                body = (await resp.text(errors="replace"))[:200]
                raise ReproError(
                    f"{base}/flush_cache failed: HTTP {resp.status} {body}",
                    hint="the cache can only be flushed while no request is running",
                )
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        raise _unreachable(base, exc) from None
