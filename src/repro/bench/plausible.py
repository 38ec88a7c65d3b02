"""What the protocol allows of a number a server reports about itself, so that a level or a
set holding an impossible one is judged invalid with the number named, never kept as valid.

Acceptance (tokens committed per verify step) is at least 1 (every step commits its bonus
token) and at most `speculative_num_draft_tokens + 1` (all drafts accepted, plus the bonus:
sglang/srt/speculative/*_worker.py); 0 is what a server reports before its first verify step
or without a drafter (tokenizer_manager.py), so it means "none". Gauges (`/metrics`) are
finite and not negative; counters (the simulator's clock) finite and never going back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

MAX_DRAFT_TOKENS = 1024
"""Draft tokens per verify step assumed when the server does not report its own."""


def max_accept_length(draft_tokens: int | None) -> int:
    """Tokens one verify step can commit at most."""
    return (draft_tokens if draft_tokens and draft_tokens > 0 else MAX_DRAFT_TOKENS) + 1


def acceptance_problem(value: float | None, draft_tokens: int | None, what: str) -> str | None:
    """Why a server-reported acceptance is impossible; None when it is possible or absent."""
    if value is None or value == 0:
        return None
    top = max_accept_length(draft_tokens)
    if 1 <= value <= top:
        return None
    drafts = f"num_draft_tokens {draft_tokens}" if draft_tokens else "the most draft tokens"
    return (
        f"{what} {value:g} is outside [1, {top}] ({drafts} + 1): no verify step commits "
        "that many tokens"
    )


MAX_GAUGE = 2.0**40
"""A gauge above this (requests, tokens, tokens/s) is no server's."""


def gauge_problem(name: str, value: float) -> str | None:
    """Why a gauge value is impossible (NaN, infinite, negative or past MAX_GAUGE); None when
    it is not."""
    if 0 <= value < MAX_GAUGE:
        return None
    return f"the server's {name} gauge read {value:g}: a gauge is a finite count, 0 or more"


def counter_problem(
    what: str, start: Mapping[str, float], end: Mapping[str, float], names: tuple[str, ...]
) -> str | None:
    """Why counters read at a level's start and end are impossible: one not finite, or one
    that went back (a restarted server); None when they are possible."""
    for name in names:
        a, b = start[name], end[name]
        if not (math.isfinite(a) and math.isfinite(b)):
            return f"{what} counter {name} read {a:g} then {b:g}: counters are finite"
        if b < a:
            return f"{what} counter {name} went back from {a:g} to {b:g} (a restart?)"
    return None
