"""Pin the image's patch set: sha256 of each local patch file and of each remote diff.

A remote diff (e.g. a pull request's diff at a fixed head commit) is downloaded at every lock.
Its sha256 is recorded the first time; afterwards a different diff is refused: the pinned one
(from the image spec, else from the previous lock) is the truth.
"""

from __future__ import annotations

import hashlib
import ipaddress
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http.client import HTTPMessage
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import repro  # its __version__ is looked up when used (importlib.metadata)
from repro.errors import ReproError
from repro.schema.lock import PatchPin

MAX_DIFF_BYTES = 64 << 20


@dataclass
class PatchResolution:
    pins: list[PatchPin] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # remote diffs that differ from their pin


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


def resolve_patches(
    spec: Any, spec_data: dict[str, Any], patches_dir: Path, previous: list[PatchPin]
) -> PatchResolution:
    """Pins for the spec's patch set; fills each remote diff's sha256 into `spec_data`.

    `spec` is a `repro.schema.image.ImageSpec`, `spec_data` its JSON dump (edited in place).
    """
    result = PatchResolution()
    patch_set = spec.patch_set
    if patch_set is None:
        return result
    before = {(p.source, p.name): p for p in previous}
    for name in patch_set.local:
        path = patches_dir / patch_set.name / name
        rel = f"patches/{patch_set.name}/{name}"
        if path.is_file():
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        elif ("local", name) in before:
            digest = before[("local", name)].sha256  # the lock travelled without patches/
        else:
            raise ReproError(
                f"patch file {path} is missing",
                hint=f"image spec {spec.name} lists it in patch_set.local",
            )
        result.pins.append(PatchPin(name=name, source="local", path=rel, sha256=digest))
    for i, diff in enumerate(patch_set.remote):
        digest = hashlib.sha256(download_diff(diff.url)).hexdigest()
        old = before.get(("remote", diff.name))
        pinned = diff.sha256 or (old.sha256 if old and old.url == diff.url else None)
        if pinned and pinned != digest:
            result.changed.append(
                f"remote patch {diff.name} ({diff.url}) changed: sha256 {digest} != pinned {pinned}"
            )
            digest = pinned
        result.pins.append(PatchPin(name=diff.name, source="remote", url=diff.url, sha256=digest))
        spec_data["patch_set"]["remote"][i]["sha256"] = digest
    return result
