"""Server URLs as repro uses, stores and shows them: checked once where they come in.

A URL's `user:password@` is never written (run folder name, run.json, recipe.json, `repro
runs`) nor sent (the client's Host header): SGLang authenticates with an API key header, not
with a URL's userinfo, so it is dropped where the URL comes in.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Callable
from urllib.parse import urlsplit, urlunsplit

from repro.errors import ReproError

EXAMPLE = "e.g. http://127.0.0.1:30000"


def server_url(url: str, option: str = "--url") -> str:
    """`url` as `scheme://host[:port][/path]`: http(s), a host and a port in 1-65535, without
    userinfo, query or trailing slash; one error line when it is none of that."""
    text = url.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as err:
        raise ReproError(f"{option} {url!r} is not a URL: {err}", hint=EXAMPLE) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ReproError(f"{option} {url!r} is not an http(s) URL with a host", hint=EXAMPLE)
    if port == 0 or not text.isprintable():
        raise ReproError(f"{option} {url!r}: port 0 or control characters", hint=EXAMPLE)
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    netloc = host + (f":{port}" if port is not None else "")
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def server_urls(urls: list[str] | tuple[str, ...], warn: Callable[[str], None]) -> list[str]:
    """Each of `urls` through `server_url`, saying (through `warn`) when a `user:password@`
    was dropped, without repeating it."""
    out = []
    for url in urls:
        clean = server_url(url)
        if "@" in urlsplit(url.strip()).netloc:
            warn(f"note: the user:password of {clean} is dropped (never stored, shown or sent)")
        out.append(clean)
    return out


def http_status(url: str, timeout: float) -> int | None:
    """The HTTP status a GET of `url` answers with, or None when nothing answers in time
    (health gates poll this until a deadline)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as err:
        return err.code
    except (OSError, ValueError):
        return None
