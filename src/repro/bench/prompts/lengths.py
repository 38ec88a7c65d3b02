"""Prompts chosen by length, for token-count buckets (repro.schema.buckets): the client has no
tokenizer, so a prompt's length is estimated as its characters / CHARS_PER_TOKEN (about
right for English text on a BPE tokenizer; what the server counts is recorded as it counted
it). A prompt that falls in no bucket is not sent: a bucket list that ends at the server's
context keeps documents that cannot fit out of the run.
"""

from __future__ import annotations

from repro.bench.prompts.datasets import PromptSet
from repro.errors import ReproError
from repro.schema.buckets import Bucket

CHARS_PER_TOKEN = 4.0


def estimated_tokens(text: str) -> float:
    return len(text) / CHARS_PER_TOKEN


def in_buckets(prompts: list[str], buckets: list[Bucket]) -> list[list[str]]:
    """Each bucket's prompts, in the set's order."""
    return [[p for p in prompts if b.holds(estimated_tokens(p))] for b in buckets]


def choose_by_length(prompts: list[str], buckets: list[Bucket], per_bucket: int) -> list[int]:
    """The indices of each bucket's first `per_bucket` prompts, bucket after bucket (accept)."""
    out = []
    for bucket in buckets:
        inside = [i for i, p in enumerate(prompts) if bucket.holds(estimated_tokens(p))]
        out += inside[:per_bucket]
    return out


def interleaved_by_length(source: PromptSet, buckets: list[Bucket]) -> PromptSet:
    """The set's prompts that fall in a bucket, taken from each bucket in turn (a bench
    level's first requests spread over the buckets), with its provenance; a ReproError when
    none does."""
    groups = [g for g in in_buckets(source.prompts, buckets) if g]
    if not groups:
        raise ReproError(
            f"dataset {source.name}: no prompt falls in the length buckets "
            f"{', '.join(b.label for b in buckets)}",
            hint=f"buckets count tokens (about {CHARS_PER_TOKEN:g} characters each); widen "
            "them, or pick a dataset with longer or shorter prompts",
        )
    longest = max(len(g) for g in groups)
    chosen = [g[i] for i in range(longest) for g in groups if i < len(g)]
    return PromptSet(source.name, chosen, source.source, source.fit_to_length)
