"""The tokens a DFlash-family recipe drafts per step: one answer, one source, for every stage.

SGLang decides it: with neither `--speculative-num-draft-tokens` nor its alias
`--speculative-dflash-block-size`, its DFLASH hook takes the drafter config.json's
`block_size` (`_handle_dflash`, srt/arg_groups/speculative_hook.py; read by
`parse_dflash_draft_config`, srt/speculative/dflash_utils.py). repro carries that answer:
the recipe's own value, else the drafter's config.json at the locked commit (the lock's
`drafter_block_size`), else an assumption, labelled so wherever it is shown. The assumption
is the block size of the drafters the shipped recipes name, and the drafter twin the engine
dry-start runs is made with the very number this module answers (realengine/twins.py), so
SGLang's own start-up resolves it as the simulator serves it and the plan predicts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from repro.errors import ReproError
from repro.lock.locked import resolved, with_lock
from repro.schema.lock import Lock
from repro.schema.recipe import Recipe

# speculative.algorithm values whose draft tokens are the drafter's block size.
BLOCK_ALGORITHMS = ("DFLASH", "DDTREE")

# The block size assumed for a model's DFlash drafters until a config.json is read: z-lab's
# closest published Kimi card (Kimi-K2.5-DFlash) is block 8; the Qwen3.6-27B card launches
# with --speculative-num-draft-tokens 16. The tiny test models: their own drafters.
ASSUMED_BLOCK_SIZE = {
    "moonshotai/Kimi-K2.6": 8,
    "nvidia/Kimi-K2.6-NVFP4": 8,
    "Qwen/Qwen3.6-27B": 16,
    "repro-tiny/qwen3-tiny": 4,
    "repro-sim/tiny-chat": 8,
}


@dataclass(frozen=True)
class DraftTokens:
    """How many tokens a step drafts, and where that number comes from."""

    value: int
    origin: Literal["recipe", "config.json", "assumed"]
    source: str  # in words, for the label

    @property
    def assumed(self) -> bool:
        return self.origin == "assumed"

    def label(self) -> str:
        """`8 (z-lab/X config.json at 1a2b3c4)` or `8 (assumed: ...)`, for every page."""
        return f"{self.value} ({'assumed: ' if self.assumed else ''}{self.source})"


def draft_tokens(recipe: Recipe, lock: Lock | None = None) -> DraftTokens | None:
    """The draft tokens per step of `recipe` (None: not a DFlash-family recipe, or nothing is
    known: SGLang then refuses at start, which the dry-start reports)."""
    spec = recipe.speculative
    if spec is None or spec.algorithm not in BLOCK_ALGORITHMS or recipe.drafter is None:
        return None
    asked = spec.num_draft_tokens or spec.block_size
    if asked:
        return DraftTokens(asked, "recipe", "the recipe")
    return drafter_block_size(recipe, lock)


def drafter_block_size(recipe: Recipe, lock: Lock | None = None) -> DraftTokens | None:
    """The block size of `recipe`'s DFlash drafter: its config.json at the locked commit, else
    assumed (what the drafter twin is made with)."""
    if recipe.drafter is None:
        return None
    if lock is not None and lock.drafter_block_size and lock.drafter is not None:
        at = lock.drafter.sha[:7] if lock.drafter.sha else lock.drafter.revision
        return DraftTokens(
            lock.drafter_block_size, "config.json", f"{recipe.drafter.repo} config.json at {at}"
        )
    assumed = ASSUMED_BLOCK_SIZE.get(recipe.model.repo)
    if assumed is None:
        return None
    return DraftTokens(
        assumed,
        "assumed",
        f"{recipe.model.repo}'s drafters' block size; no config.json of "
        f"{recipe.drafter.repo} is locked",
    )


def current_draft_tokens(recipe: Recipe) -> DraftTokens | None:
    """`draft_tokens` with the lock `repro lock` wrote for `recipe`, when it is there and
    current (an unreadable one counts as none: the recipe alone then says)."""
    try:
        lock = with_lock(resolved(recipe), required=False).lock
    except ReproError:
        lock = None
    return draft_tokens(recipe, lock)
