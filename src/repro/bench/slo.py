"""Whether a level meets latency limits, where a ladder stops meeting them, and the next level
an SLO search measures (`bench.slo_search`, repro.schema.slo): one reading for bench, the
campaign's decision and its prediction."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence

from repro.schema.level import Level
from repro.schema.recipe import Bench
from repro.schema.slo import SloSearch


def meets(level: Level, limits: dict[str, float]) -> bool:
    """Every limited key measured and at most its bound (a missing value fails)."""
    for key, limit in limits.items():
        value = getattr(level, key, None)
        if value is None or not value <= limit:
            return False
    return True


def bracket(levels: Iterable[Level], limits: dict[str, float]) -> tuple[Level | None, Level | None]:
    """Over the valid levels by concurrency: the highest that meets `limits` with every level
    below it, and the first that fails (None where there is none)."""
    below: Level | None = None
    for level in sorted((lv for lv in levels if lv.valid), key=lambda lv: lv.concurrency):
        if not meets(level, limits):
            return below, level
        below = level
    return below, None


def next_search_level(
    levels: Sequence[Level], search: SloSearch, ladder: Iterable[int]
) -> int | None:
    """The concurrency to measure next, or None: the search has spent its extra levels, the
    bracket is open, or its two ends are within `resolution` (or adjacent integers)."""
    measured = {level.concurrency for level in levels}
    if len(measured - set(ladder)) >= search.extra_levels:
        return None
    below, above = bracket(levels, search.limits)
    if below is None or above is None:
        return None
    low, high = below.concurrency, above.concurrency
    if high / low <= search.resolution:
        return None
    middle = round(math.sqrt(low * high))  # the midpoint in log concurrency
    if not low < middle < high or middle in measured:
        return None
    return middle


def searched_concurrencies(measured: Callable[[], Sequence[Level]], bench: Bench) -> Iterator[int]:
    """The plan's SLO search, one concurrency at a time: the caller measures each before
    asking for the next, which is chosen from `measured()`, every level so far (the sweep and
    the campaign's prediction search alike)."""
    search = bench.slo_search
    while search is not None:
        found = next_search_level(measured(), search, bench.concurrencies)
        if found is None:
            return
        yield found


def search_summary(levels: Sequence[Level], search: SloSearch, ladder: Iterable[int]) -> str:
    """One line: where the levels say the server stops meeting the search's limits."""
    limits = ", ".join(f"{key}<={limit:g}" for key, limit in search.limits.items())
    added = len({lv.concurrency for lv in levels} - set(ladder))
    below, above = bracket(levels, search.limits)
    if below is None:
        where = "no valid level meets it"
    elif above is None:
        where = f"every valid level meets it, up to c={below.concurrency}"
    else:
        where = f"meets it up to c={below.concurrency}, fails from c={above.concurrency}"
    return f"SLO search ({limits}): {where} ({added} level{'s' * (added != 1)} added)"
