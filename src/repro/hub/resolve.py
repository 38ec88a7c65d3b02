"""Resolve a repository + revision to a commit SHA and the files a server needs."""

from __future__ import annotations

from huggingface_hub import HfApi

from repro.hub.errors import HubError, hub_errors
from repro.hub.select import SELECT_PATTERNS, is_weight_file, select_files
from repro.spec.lock import FileEntry, RepoPin


def resolve_repo(repo: str, revision: str = "main", *, endpoint: str | None = None) -> RepoPin:
    """Pin `repo` at `revision`: its commit SHA and the selected files with sizes and sha256.

    One `model_info(files_metadata=True)` call; the token comes from HF_TOKEN (read by
    huggingface_hub), and gated repositories resolve without one (their file list is public).
    """
    api = HfApi(endpoint=endpoint)
    with hub_errors(repo, revision, endpoint):
        info = api.model_info(repo, revision=revision, files_metadata=True)
    if not info.sha:
        raise HubError(f"the Hub gave no commit SHA for {repo}@{revision}")
    siblings = {s.rfilename: s for s in info.siblings or []}
    files = []
    for path in select_files(siblings):
        sibling = siblings[path]
        if sibling.size is None:
            raise HubError(
                f"the Hub gave no size for {repo}/{path} at {info.sha}",
                hint="the endpoint must answer model_info with ?blobs=true (files metadata)",
            )
        sha256 = sibling.lfs.sha256 if sibling.lfs is not None else None
        files.append(FileEntry(path=path, size=sibling.size, sha256=sha256))
    if not any(is_weight_file(f.path) for f in files):
        raise HubError(
            f"{repo}@{info.sha[:12]} has no weight files (*.safetensors, or *.bin/*.pt/*.gguf)",
            hint=f"check the repository and revision; files are selected by {SELECT_PATTERNS}",
        )
    return RepoPin.make(repo, revision, info.sha, files)
