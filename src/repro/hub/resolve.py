"""Resolve a repository + revision to a commit SHA and the files a server needs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from huggingface_hub import HfApi, get_session, hf_hub_url
from huggingface_hub.utils import build_hf_headers, hf_raise_for_status

from repro.fileread import MiB, read_bytes
from repro.hub.cache import cache_root, snapshot_dir, storage_dir
from repro.hub.errors import HubError, hub_errors
from repro.hub.fetch import is_offline
from repro.hub.select import SELECT_PATTERNS, is_weight_file, select_files
from repro.schema.deployment import DrafterFacts, ModelFacts
from repro.schema.lock import FileEntry, RepoPin


def resolve_repo(repo: str, revision: str = "main", *, endpoint: str | None = None) -> RepoPin:
    """Pin `repo` at `revision`: its commit SHA and the selected files with sizes and sha256.

    One `model_info(files_metadata=True)` call; the token comes from HF_TOKEN (read by
    huggingface_hub), and gated repositories resolve without one (their file list is public).
    With the Hub offline (HF_HUB_OFFLINE), the commit is read from the Hub cache instead.
    """
    if is_offline():
        return resolve_from_cache(repo, revision, cache_root())
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
    return _pin_with_weights(repo, revision, info.sha, files)


def resolve_from_cache(repo: str, revision: str, cache: Path) -> RepoPin:
    """Pin `repo` at `revision` from the Hub cache alone: `refs/<revision>` (or the commit
    itself) and the snapshot's files; an LFS file's sha256 is its blob's name, as
    huggingface_hub names LFS blobs (a published model's too: `repro.hub.publish`)."""
    storage = storage_dir(cache, repo)
    ref = storage / "refs" / revision
    sha = ref.read_text().strip() if ref.is_file() else revision
    snapshot = storage / "snapshots" / sha
    if not snapshot.is_dir():
        raise HubError(
            f"HF_HUB_OFFLINE is set and {repo}@{revision} is not in the Hub cache at {cache}",
            hint="unset HF_HUB_OFFLINE to resolve it on the Hub, or point HF_HUB_CACHE at a "
            "cache that has it",
        )
    found = {
        path.relative_to(snapshot).as_posix(): path
        for path in snapshot.rglob("*")
        if path.is_file()
    }
    files = []
    for name in select_files(found):
        blob = found[name].resolve().name
        lfs = len(blob) == 64 and all(c in "0123456789abcdef" for c in blob)
        size = found[name].stat().st_size
        files.append(FileEntry(path=name, size=size, sha256=blob if lfs else None))
    return _pin_with_weights(repo, revision, sha, files)


def _pin_with_weights(repo: str, revision: str, sha: str, files: list[FileEntry]) -> RepoPin:
    if not any(is_weight_file(f.path) for f in files):
        raise HubError(
            f"{repo}@{sha[:12]} has no weight files (*.safetensors, or *.bin/*.pt/*.gguf)",
            hint=f"check the repository and revision; files are selected by {SELECT_PATTERNS}",
        )
    return RepoPin.make(repo, revision, sha, files)


# A model's or drafter's config.json is kilobytes; a larger one is not read into memory.
MAX_CONFIG_BYTES = 16 * MiB


def read_config(pin: RepoPin, *, endpoint: str | None = None) -> dict[str, Any] | None:
    """A repository's config.json at the pinned commit (None without one). The file is read,
    not cached: `repro fetch` downloads it (offline, it is read from the cache)."""
    entry = next((f for f in pin.files if f.path == "config.json"), None)
    if pin.sha is None or entry is None:
        return None
    if entry.size > MAX_CONFIG_BYTES:  # the Hub's listing says so before a byte is read
        raise HubError(
            f"{pin.label}: config.json is {entry.size} bytes, more than any model's config "
            f"({MAX_CONFIG_BYTES} at most): not read",
            hint="check the repository and revision",
        )
    if is_offline():
        where = f"{pin.label}: config.json in the Hub cache"
        path = snapshot_dir(cache_root(), pin) / "config.json"
        content = read_bytes(path, where, max_bytes=MAX_CONFIG_BYTES)
    else:
        url = hf_hub_url(pin.repo, "config.json", revision=pin.sha, endpoint=endpoint)
        with hub_errors(pin.repo, pin.sha, endpoint):
            response = get_session().get(url, headers=build_hf_headers(), follow_redirects=True)
            hf_raise_for_status(response)
        content = response.content
    try:
        config = json.loads(content)
    except ValueError as bad:
        raise HubError(f"{pin.label}: config.json is not JSON ({bad})") from None
    return config if isinstance(config, dict) else {}


def _positive(config: dict[str, Any], key: str) -> int | None:
    value = config.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def model_facts(config: dict[str, Any]) -> ModelFacts:
    """What a drafter and the parallel sizes must fit, from a model's config.json (a
    multimodal config's `text_config` where the top level lacks a key)."""
    text = config.get("text_config")
    merged = {**(text if isinstance(text, dict) else {}), **config}
    architectures = merged.get("architectures")
    first = architectures[0] if isinstance(architectures, list) and architectures else None
    return ModelFacts(
        architecture=first if isinstance(first, str) else None,
        vocab_size=_positive(merged, "vocab_size"),
        hidden_size=_positive(merged, "hidden_size"),
        num_attention_heads=_positive(merged, "num_attention_heads"),
    )


def drafter_facts(config: dict[str, Any]) -> DrafterFacts:
    """The vocabulary and hidden size a drafter shares with its target, from its config.json
    (its own `architectures` name the drafter's class, not the target's)."""
    return DrafterFacts(
        target_architecture=None,
        vocab_size=_positive(config, "vocab_size"),
        hidden_size=_positive(config, "hidden_size"),
    )


def architectures_in(config: dict[str, Any] | None) -> list[str]:
    """The model classes a config names (`architectures`: what SGLang's registry loads)."""
    names = (config or {}).get("architectures")
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


def drafter_block_size(pin: RepoPin, *, endpoint: str | None = None) -> int | None:
    """The drafter's block size from its config.json at the pinned commit (see
    `block_size_of`)."""
    return block_size_of(pin, read_config(pin, endpoint=endpoint))


def block_size_of(pin: RepoPin, config: dict[str, Any] | None) -> int | None:
    """The draft tokens per step the drafter was trained with (None without a config.json or
    without the key).

    Read in SGLang's order (srt/speculative/dflash_utils.py, `parse_dflash_draft_config`):
    `dflash_config.block_size` when the nested section has the key, else the top-level
    `block_size` that current z-lab checkpoints carry (the `-b16` in Qwen3-4B-DFlash-b16;
    their cards launch SGLang with --speculative-num-draft-tokens equal to it).
    """
    if config is None:
        return None
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
