"""A small stand-in for THUDM/LongBench-v2 in its layout (one data.json, the same columns):
documents of a few hundred, a few thousand and tens of thousands of characters."""

from __future__ import annotations

import json

from hubserver.server import HubServer

# characters of each row's context: ~100, ~2k and ~12k tokens at 4 characters a token
CONTEXT_CHARS = (400, 400, 8_000, 8_000, 48_000)
_LETTERS = "bdfgklmnprstvz"


def _word(i: int, k: int) -> str:
    """A five-letter word of letters only (one token on a word-piece tokenizer)."""
    n = i * 100_003 + k
    return "".join(_LETTERS[(n // len(_LETTERS) ** j) % len(_LETTERS)] for j in range(5))


def _row(i: int, chars: int) -> dict[str, str]:
    words = " ".join(_word(i, k) for k in range(chars // 5))
    return {
        "_id": f"id{i}", "domain": "Single-Document QA", "sub_domain": "Financial",
        "difficulty": "easy", "length": "short", "question": f"What does document {i} say?",
        "choice_A": "yes", "choice_B": "no", "choice_C": "maybe", "choice_D": "never",
        "answer": "A", "context": words[:chars],
    }  # fmt: skip


def add_longbench_v2(hub: HubServer) -> None:
    rows = [_row(i, chars) for i, chars in enumerate(CONTEXT_CHARS)]
    files = {"README.md": b"# LongBench v2", "data.json": json.dumps(rows).encode()}
    hub.add_dataset("THUDM/LongBench-v2", files)
