"""What the hub stage reports: per repository, what `fetch` downloaded and checked.

The pins it resolves (`RepoPin`, `FileEntry`) are lock declarations: `repro.schema.lock`.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class RepoFetch(BaseModel):
    """What `fetch` did for one repository."""

    repo: str
    sha: str | None
    snapshot: str | None = Field(
        description="Snapshot folder in the Hub cache (what SGLang loads)."
    )
    files: int = 0
    total_bytes: int = 0
    downloaded_bytes: int = Field(default=0, description="Bytes that were not in the cache before.")
    hashed_files: int = Field(
        default=0, description="Files whose sha256 was checked against the lock."
    )
    hashed_while_downloading: int = Field(
        default=0, description="Of hashed_files, those hashed as they were written (no re-read)."
    )
    seconds: float = 0.0
    verify_seconds: float = Field(
        default=0.0, description="Of seconds, what verifying took after the download had ended."
    )
    simulated: bool = False


class FetchReport(BaseModel):
    """What `fetch` did: per repo, plus the disk space it saw before downloading."""

    cache_dir: str
    offline: bool = False
    needed_bytes: int = Field(default=0, description="Bytes that had to be downloaded.")
    free_bytes: int | None = Field(default=None, description="Free bytes before downloading.")
    removed_partial_bytes: int = Field(
        default=0, description="Bytes of stale partial downloads removed before the space check."
    )
    repos: list[RepoFetch] = Field(default_factory=list)
