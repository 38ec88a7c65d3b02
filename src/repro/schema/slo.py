"""Latency SLOs on a level's keys, and the search for where a server stops meeting one.

One owner for the keys an SLO may bound (Level's p90_ttft_ms, ...), for a campaign's named SLOs
and for `bench.slo_search`, which adds levels between the last that meets its limits and the
first that fails (aiperf's SLO search, in concurrency): a ladder of 1..256 in powers of two
says only "between 32 and 64"; three extra levels say "between 45 and 54".
"""

from __future__ import annotations

from pydantic import Field, field_validator

from repro.schema.base import StrictModel
from repro.schema.level import Level

# The latency keys of a level an SLO can bound (Level's *_ms fields).
SLO_KEYS = tuple(
    name
    for name in Level.model_fields
    if name.endswith("_ms") and name.split("_", 1)[0] in ("mean", "median", "p90", "p99")
)


def check_limits(limits: dict[str, float], what: str) -> dict[str, float]:
    """`limits` as given, or ValueError naming `what` (an SLO's name) and the key at fault."""
    if not limits:
        raise ValueError(f"{what} bounds nothing")
    for key, limit in limits.items():
        if key not in SLO_KEYS:
            raise ValueError(f"{what}: {key!r} is not a latency key; one of: {', '.join(SLO_KEYS)}")
        if not limit > 0:
            raise ValueError(f"{what}: {key}: the bound must be above 0 ms")
    return limits


class SloSearch(StrictModel):
    """Extra levels after the ladder, bisecting (in log concurrency) between the highest level
    that meets `limits` and the lowest that fails, until they are `resolution` apart."""

    limits: dict[str, float] = Field(
        description="Level key -> upper bound in ms (e.g. {p90_ttft_ms: 2000}); keys: "
        f"{', '.join(SLO_KEYS)}."
    )
    extra_levels: int = Field(
        default=3, ge=1, le=16, description="Levels the search may add at most."
    )
    resolution: float = Field(
        default=1.25,
        gt=1.0,
        le=4.0,
        description="Stop once the failing level is at most this many times the meeting one.",
    )

    @field_validator("limits")
    @classmethod
    def _limits(cls, value: dict[str, float]) -> dict[str, float]:
        return check_limits(value, "slo_search.limits")
