"""The hub stage: pin Hub repositories to commits, and download them safely.

Public API:

    resolve_repo(repo, revision, endpoint=None) -> RepoPin     # commit SHA + selected files
    drafter_block_size(pin, endpoint=None) -> int | None       # config.json's block_size
    read_config(pin, endpoint=None) -> dict | None             # config.json at the commit
    model_facts(config), drafter_facts(config), block_size_of(pin, config)
    architectures_in(config) -> list[str]                      # the classes it names
    fetch_pins(pins, cache_dir=None, margin=SpaceMargin(), verify_all=False, ...) -> FetchReport
    verify_pin(cache, pin, hash_paths=None, streamed=None) -> Verified(problems, hashed, ...)
    select_files(paths) -> list[str]                          # SELECT_PATTERNS, one list
    check_space(needed, cache, margin, what) -> free bytes     # raises InsufficientSpace

huggingface_hub reads HF_ENDPOINT, HF_HUB_CACHE, HF_HUB_OFFLINE and HF_TOKEN from the
environment; repro never stores or prints the token.
"""

from repro.hub.cache import SpaceMargin, cache_root, check_space
from repro.hub.errors import GatedRepoAccess, HubError, InsufficientSpace, VerificationFailed
from repro.hub.fetch import fetch_pins, is_offline
from repro.hub.models import FetchReport, RepoFetch
from repro.hub.resolve import (
    architectures_in,
    block_size_of,
    drafter_block_size,
    drafter_facts,
    model_facts,
    read_config,
    resolve_repo,
)
from repro.hub.select import SELECT_PATTERNS, select_files
from repro.hub.verify import verify_pin

__all__ = [
    "SELECT_PATTERNS",
    "FetchReport",
    "GatedRepoAccess",
    "HubError",
    "InsufficientSpace",
    "RepoFetch",
    "SpaceMargin",
    "VerificationFailed",
    "architectures_in",
    "block_size_of",
    "cache_root",
    "check_space",
    "drafter_block_size",
    "drafter_facts",
    "fetch_pins",
    "is_offline",
    "model_facts",
    "read_config",
    "resolve_repo",
    "select_files",
    "verify_pin",
]
