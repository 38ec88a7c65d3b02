"""Multi-turn conversations in a bench plan and what a multi-turn level records.

A conversation level sends whole conversations, turn after turn: each turn carries the
history (the earlier user turns and the answers the server gave to them), so every turn after
the first shares a prefix with the one before and SGLang's radix cache can serve it. The cache
state a level starts from is part of the plan: `flushed` (POST /flush_cache after the warm-up,
before the measured requests) or `warm` (whatever earlier levels and the warm-up left).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from repro.schema.base import StrictModel

CacheState = Literal["flushed", "warm"]
CACHE_STATES: tuple[CacheState, ...] = ("flushed", "warm")
MAX_TURNS = 64


class Conversations(StrictModel):
    """The recipe's `bench.conversation`: send multi-turn conversations instead of single
    prompts (`repro bench --turns N --cache flushed|warm`)."""

    turns: int = Field(
        ge=2,
        le=MAX_TURNS,
        description="User turns per conversation (a dataset's dialogues send up to this many "
        "of their own human turns; a synthetic conversation sends exactly this many).",
    )
    cache: CacheState = Field(
        "flushed",
        description="The radix cache each level starts from: flushed (/flush_cache after the "
        "warm-up) or warm (left as earlier levels left it).",
    )


class TurnStats(BaseModel):
    """One turn position over a level's conversations (turn 0: the first user turn)."""

    turn: int
    requests: int = Field(description="requests of this turn that succeeded")
    mean_prompt_tokens: float = Field(description="the server's prompt_tokens, mean")
    mean_cached_tokens: float = Field(description="the server's cached_tokens, mean")
    cache_hit_rate: float = Field(description="sum cached_tokens / sum prompt_tokens")
    median_ttft_ms: float | None = None


class ConversationLevel(BaseModel):
    """A multi-turn level's conversations, its cache state and the reuse the server reported
    (`cached_tokens`: meta_info on /generate, usage.prompt_tokens_details on chat, which SGLang
    sends only with --enable-cache-report)."""

    cache: CacheState
    conversations: int = Field(description="conversations the level sent")
    turns: int = Field(description="the most turns a conversation had")
    cached_tokens: int = Field(description="the server's cached_tokens, summed over requests")
    prompt_tokens: int = Field(description="the server's prompt_tokens, summed over requests")
    cache_hit_rate: float | None = Field(
        default=None, description="cached_tokens / prompt_tokens; None without prompt tokens"
    )
    by_turn: list[TurnStats] = Field(default_factory=list)
