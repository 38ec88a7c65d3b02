"""What the hub stage pins and reports: files with sizes and checksums, a repo at a commit."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class FileEntry(BaseModel):
    """One file of a repository at a commit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(description="Path inside the repository.")
    size: int = Field(ge=0, description="Size in bytes.")
    sha256: str | None = Field(
        default=None,
        description="sha256 of the content for LFS files (the Hub gives it), else null.",
    )


class RepoPin(BaseModel):
    """A Hub repository pinned to a commit: what `repro lock` records for model and drafter."""

    model_config = ConfigDict(extra="forbid")

    repo: str = Field(description="Repository id, e.g. moonshotai/Kimi-K2.6.")
    revision: str = Field(description="The revision the recipe asked for (branch, tag or SHA).")
    sha: str | None = Field(description="The commit SHA it resolved to (null when simulated).")
    files: list[FileEntry] = Field(default_factory=list, description="Selected files, by path.")
    total_bytes: int = Field(default=0, ge=0, description="Sum of the selected files' sizes.")
    simulated: bool = Field(
        default=False,
        description="A simulated deployment: the repo is a placeholder, nothing to fetch.",
    )

    @classmethod
    def make(cls, repo: str, revision: str, sha: str, files: list[FileEntry]) -> RepoPin:
        files = sorted(files, key=lambda f: f.path)
        return cls(
            repo=repo,
            revision=revision,
            sha=sha,
            files=files,
            total_bytes=sum(f.size for f in files),
        )

    @classmethod
    def placeholder(cls, repo: str, revision: str) -> RepoPin:
        return cls(repo=repo, revision=revision, sha=None, simulated=True)

    @property
    def label(self) -> str:
        return f"{self.repo}@{self.sha[:12] if self.sha else self.revision}"


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
    seconds: float = 0.0
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
