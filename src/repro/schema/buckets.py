"""Token-count buckets, as `repro accept --length-buckets/--position-buckets` and `repro bench
--length-buckets` take them: `LOW-HIGH,...` in tokens, `k` meaning 1024 and `m` 1024 * 1024
(`0-8k,8k-32k,32k-`: the last open), each holding [LOW, HIGH), in ascending order, never
overlapping."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from pydantic import BaseModel, Field

from repro.errors import ReproError

_EDGE = re.compile(r"^(\d+)([kKmM]?)$")
_SCALE = {"": 1, "k": 1024, "m": 1024 * 1024}


@dataclass(frozen=True)
class Bucket:
    low: int
    high: int | None  # None: open

    @property
    def label(self) -> str:
        return f"{_edge(self.low)}-{_edge(self.high) if self.high is not None else ''}"

    def holds(self, tokens: float) -> bool:
        return tokens >= self.low and (self.high is None or tokens < self.high)


def _edge(tokens: int) -> str:
    for suffix, scale in (("m", 1024 * 1024), ("k", 1024)):
        if tokens and tokens % scale == 0:
            return f"{tokens // scale}{suffix}"
    return str(tokens)


def _tokens(text: str, option: str, spec: str) -> int:
    found = _EDGE.match(text.strip())
    if not found:
        raise ReproError(
            f"{option} {spec!r}: {text!r} is not a token count",
            hint="give LOW-HIGH pairs such as 0-8k,8k-32k,32k- (k: 1024 tokens)",
        )
    return int(found[1]) * _SCALE[found[2].lower()]


def parse_buckets(spec: str, option: str) -> list[Bucket]:
    """`0-8k,8k-32k,32k-` as buckets, in order; a ReproError names what is wrong."""
    buckets = []
    for part in (p for p in spec.split(",") if p.strip()):
        low, sep, high = part.partition("-")
        if not sep:
            raise ReproError(
                f"{option} {spec!r}: {part!r} is not LOW-HIGH",
                hint="e.g. 0-8k,8k-32k,32k- (the last bucket may be open)",
            )
        top = _tokens(high, option, spec) if high.strip() else None
        buckets.append(Bucket(_tokens(low, option, spec), top))
    for a, b in itertools.pairwise(buckets):
        if a.high is None or a.high > b.low:
            raise ReproError(
                f"{option} {spec!r}: {a.label} overlaps {b.label}",
                hint="give buckets in ascending order, each starting where the last ended or later",
            )
    if not buckets or any(b.high is not None and b.high <= b.low for b in buckets):
        raise ReproError(
            f"{option} {spec!r}: every bucket needs LOW < HIGH", hint="e.g. 0-8k,8k-32k,32k-"
        )
    return buckets


class LengthBucketLevel(BaseModel):
    """A bench level's requests whose prompt_tokens (the server's count) fall in one context
    length bucket (`repro bench --length-buckets`)."""

    bucket: str = Field(description="its label, e.g. 8k-32k (k: 1024 tokens)")
    low: int = Field(description="tokens, inclusive")
    high: int | None = Field(description="tokens, exclusive; None: no upper bound")
    requests: int = Field(description="requests in the bucket that succeeded")
    mean_prompt_tokens: float | None = None
    median_ttft_ms: float | None = None
    median_tpot_ms: float | None = None
    accept_length: float | None = Field(
        default=None, description="pooled: completion_tokens / spec_verify_ct; None without spec"
    )


def bucket_spec_problem(spec: str) -> str | None:
    """What is wrong with a bucket spec, or None (for a recipe field's validator)."""
    try:
        parse_buckets(spec, "length_buckets")
    except ReproError as exc:
        return exc.message
    return None
