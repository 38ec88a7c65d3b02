"""Download a remote diff (e.g. a pull request's diff at a fixed head commit) safely: only
over the redirects `check_redirect` allows, and at most MAX_DIFF_BYTES. The patch cache
(patchcache.py) calls it once per diff and pins what it gave.
"""

from __future__ import annotations

import ipaddress
import socket
import urllib.error
import urllib.request
from http.client import HTTPMessage
from typing import IO
from urllib.parse import urlsplit

import repro  # its __version__ is looked up when used (importlib.metadata)
from repro.errors import ReproError

MAX_DIFF_BYTES = 64 << 20


class RefusedRedirect(ReproError):
    """A diff URL redirected somewhere its content can no longer be trusted to come from."""


def _local(host: str | None) -> bool:
    """Whether `host` is (or resolves to) this machine or a private network."""
    if not host:
        return True
    try:
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False  # unresolvable: the request itself fails, with its own error
    for address in addresses:
        ip = ipaddress.ip_address(address.split("%")[0])
        if ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_unspecified:
            return True
    return False


def check_redirect(url: str, target: str) -> None:
    """Refuse a diff URL's redirect to `target` that lowers https to http, or that leads
    from a public host to this machine or a private network."""
    old, new = urlsplit(url), urlsplit(target)
    if old.scheme == "https" and new.scheme != "https":
        raise RefusedRedirect(
            f"the patch {url} redirects to plain {new.scheme}: refused",
            hint="give the diff's final https URL in the image spec",
        )
    if _local(new.hostname) and not _local(old.hostname):
        raise RefusedRedirect(
            f"the patch {url} redirects to this machine or a private network "
            f"({new.hostname}): refused",
            hint="give the diff's final URL in the image spec",
        )


class _CheckedRedirects(urllib.request.HTTPRedirectHandler):
    """Follows only the redirects `check_redirect` allows: a diff pinned into a lock must not
    come over plain HTTP or from a local service the first server pointed at."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        check_redirect(req.full_url, newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_CheckedRedirects)


def download_diff(url: str, timeout: float = 60) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": f"repro/{repro.__version__}"})
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            data: bytes = response.read(MAX_DIFF_BYTES + 1)
    except (urllib.error.URLError, OSError) as err:
        raise ReproError(
            f"cannot download the patch {url}: {err}",
            hint="check the network; the image build needs this diff too",
        ) from None
    if len(data) > MAX_DIFF_BYTES:
        raise ReproError(f"the patch {url} is larger than {MAX_DIFF_BYTES >> 20} MiB")
    return data
