"""Resolve a repository + revision to a commit SHA and the files a server needs."""

from __future__ import annotations

import json

from huggingface_hub import HfApi, get_session, hf_hub_url
from huggingface_hub.utils import build_hf_headers, hf_raise_for_status

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


def drafter_block_size(pin: RepoPin, *, endpoint: str | None = None) -> int | None:
    """The drafter's block size from its config.json at the pinned commit: the draft tokens per
    step it was trained with (None without a config.json or without the key).

    Read in SGLang's order (srt/speculative/dflash_utils.py, `parse_dflash_draft_config`):
    `dflash_config.block_size` when the nested section has the key, else the top-level
    `block_size` that current z-lab checkpoints carry (the `-b16` in Qwen3-4B-DFlash-b16;
    their cards launch SGLang with --speculative-num-draft-tokens equal to it). The file is
    read, not cached: `repro fetch` downloads it.
    """
    if pin.sha is None or not any(f.path == "config.json" for f in pin.files):
        return None
    url = hf_hub_url(pin.repo, "config.json", revision=pin.sha, endpoint=endpoint)
    with hub_errors(pin.repo, pin.sha, endpoint):
        response = get_session().get(url, headers=build_hf_headers(), follow_redirects=True)
        hf_raise_for_status(response)
    try:
        config = json.loads(response.content)
    except ValueError as bad:
        raise HubError(f"{pin.label}: config.json is not JSON ({bad})") from None
    config = config if isinstance(config, dict) else {}
    nested = config.get("dflash_config")
    nested = nested if isinstance(nested, dict) else {}
    value = nested["block_size"] if "block_size" in nested else config.get("block_size")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise HubError(
            f"{pin.label}: config.json block_size is {value!r}, not a positive integer",
            hint="check the drafter repository and revision",
        )
    return value
