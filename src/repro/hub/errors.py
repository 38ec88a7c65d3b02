"""Hub failures as `ReproError`s that say what to do (and never contain a token)."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import httpx2
from huggingface_hub import constants
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from repro.errors import ReproError
from repro.exitcodes import ExitCode

TOKEN_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")


class HubError(ReproError):
    """The Hub refused or could not be reached."""


class GatedRepoAccess(HubError):
    """A gated repository this token (or no token) may not download."""


class InsufficientSpace(ReproError):
    """Not enough free disk space for the download."""

    exit_code = ExitCode.NO_SPACE


class VerificationFailed(ReproError):
    """Files in the cache do not match the lock."""


def scrub(text: str) -> str:
    """`text` with any token value from the environment replaced by `***`."""
    for name in TOKEN_ENV:
        value = os.environ.get(name, "").strip()
        if len(value) >= 4:
            text = text.replace(value, "***")
    return text


def endpoint_url(endpoint: str | None = None) -> str:
    """The Hub's address as messages and records show it: any `user:password@` dropped."""
    parts = urlsplit((endpoint or constants.ENDPOINT).rstrip("/"))
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def repo_url(repo: str, endpoint: str | None = None, repo_type: str | None = None) -> str:
    prefix = constants.REPO_TYPES_URL_PREFIXES.get(repo_type or "", "")
    return f"{endpoint_url(endpoint)}/{prefix}{repo}"


def _token_set() -> bool:
    return any(os.environ.get(name, "").strip() for name in TOKEN_ENV)


def _server_says(err: HfHubHTTPError) -> str:
    message = err.response.headers.get("X-Error-Message") if err.response is not None else None
    return f" (the Hub says: {scrub(message)})" if message else ""


def gated_error(
    repo: str,
    status: int | None,
    endpoint: str | None,
    detail: str = "",
    repo_type: str | None = None,
) -> HubError:
    url = repo_url(repo, endpoint, repo_type)
    if status == 403 or (status is None and _token_set()):
        what = f"{repo} is gated and the account of HF_TOKEN has not been granted access"
    else:
        what = f"{repo} is gated: downloading it needs a token of an account with access"
    return GatedRepoAccess(
        f"{what}{detail}",
        hint=f"request access at {url} (log in, accept the conditions), then set HF_TOKEN to a "
        "read token of that account and re-run; repro never stores the token",
    )


def translate(
    err: BaseException,
    repo: str,
    revision: str,
    endpoint: str | None,
    repo_type: str | None = None,
) -> ReproError:
    """The `ReproError` to raise for a huggingface_hub / network failure about `repo`
    (a model repository, or a dataset with `repo_type="dataset"`)."""
    where = endpoint_url(endpoint)
    url = repo_url(repo, endpoint, repo_type)
    if isinstance(err, GatedRepoError):
        status = err.response.status_code if err.response is not None else None
        return gated_error(repo, status, endpoint, _server_says(err), repo_type)
    if isinstance(err, RevisionNotFoundError):
        return HubError(
            f"{repo} has no revision '{revision}'{_server_says(err)}",
            hint=f"check the branch, tag or commit SHA at {url}",
        )
    if isinstance(err, RepositoryNotFoundError):
        noun = "dataset" if repo_type == "dataset" else "repository"
        return HubError(
            f"{noun} {repo} not found at {where}, or it is private{_server_says(err)}",
            hint="check the repository id; for a private repository set HF_TOKEN to a token "
            "with read access",
        )
    if isinstance(err, HfHubHTTPError):
        status = err.response.status_code if err.response is not None else None
        if status == 401:
            return HubError(
                f"the Hub rejected the token for {repo} (401){_server_says(err)}",
                hint="HF_TOKEN is invalid or expired: create a new read token and set HF_TOKEN",
            )
        if status == 403:
            return HubError(
                f"access to {repo} is forbidden (403){_server_says(err)}",
                hint=f"check your access at {url} and the token's permissions",
            )
        return HubError(
            f"the Hub answered {status} for {repo}@{revision}{_server_says(err)}",
            hint="retry later; `repro fetch` resumes where it stopped",
        )
    if isinstance(err, OfflineModeIsEnabled):
        return HubError(
            f"HF_HUB_OFFLINE is set, so {repo}@{revision} cannot be resolved on the Hub",
            hint="unset HF_HUB_OFFLINE (or run where the Hub is reachable)",
        )
    if isinstance(err, httpx2.HTTPError | LocalEntryNotFoundError | ConnectionError):
        return HubError(
            f"cannot reach the Hub at {where} for {repo}: {scrub(str(err)).splitlines()[0]}",
            hint="check the network (or HF_ENDPOINT) and retry: files already downloaded stay "
            "in the cache; with HF_HUB_OFFLINE=1, `repro fetch` works from the cache alone",
        )
    if isinstance(err, OSError) and err.errno == errno.ENOSPC:
        return InsufficientSpace(
            f"the disk filled up while downloading {repo}",
            hint="free space or point HF_HUB_CACHE (or --cache-dir) at a larger disk, then "
            "re-run `repro fetch`",
        )
    if isinstance(err, PermissionError):
        return ReproError(
            f"no permission to write {err.filename or 'the Hub cache'} while fetching {repo}",
            hint="use a writable cache: set HF_HUB_CACHE or pass --cache-dir",
        )
    if isinstance(err, OSError) and "Consistency check failed" in str(err):
        return HubError(
            f"a file of {repo} arrived with the wrong size: {scrub(str(err)).splitlines()[0]}",
            hint="re-run `repro fetch` (the damaged download is discarded)",
        )
    raise err


@contextmanager
def hub_errors(
    repo: str, revision: str, endpoint: str | None = None, repo_type: str | None = None
) -> Iterator[None]:
    """Turn huggingface_hub and network errors inside the block into `ReproError`s."""
    try:
        yield
    except ReproError:
        raise
    except (HfHubHTTPError, httpx2.HTTPError, LocalEntryNotFoundError, OSError) as err:
        raise translate(err, repo, revision, endpoint, repo_type) from None
