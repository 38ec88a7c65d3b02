"""`repro fetch`: download exactly what a recipe's lock pins (model and drafter)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from repro.lock.io import LockError
from repro.progress import Progress, quiet
from repro.schema.lock import Locked

if TYPE_CHECKING:
    from repro.hub import FetchReport, SpaceMargin


def fetch_recipe(
    locked: Locked,
    *,
    cache_dir: str | Path | None = None,
    margin: SpaceMargin | None = None,
    verify_all: bool = False,
    dry_run: bool = False,
    endpoint: str | None = None,
    on_event: Progress = quiet,
) -> FetchReport:
    """Download (or, offline, check) the model and drafter of the recipe's lock into the Hub
    cache; `locked` must carry its lock (`load_locked(ref, lock="require")`)."""
    # deferred: repro.hub loads huggingface_hub (slow to import); only fetching needs it
    from repro.hub import fetch_pins

    if locked.lock is None:
        raise LockError(
            f"recipe {locked.name} carries no lock: fetch downloads what a lock pins",
            hint=f"run `repro lock {locked.name}` first",
        )
    on_event(f"using {locked.lock_path}")
    return fetch_pins(
        locked.lock.pins(),
        cache_dir=cache_dir,
        margin=margin,
        verify_all=verify_all,
        dry_run=dry_run,
        endpoint=endpoint,
        on_event=on_event,
    )
