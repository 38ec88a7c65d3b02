"""Intervals on a proportion (answers correct out of asked) and on the difference of two:
what the accuracy gate flags a regression with.

Wilson's score interval keeps its coverage at 0 or n correct and for small n, where the
normal (Wald) interval collapses to a point; the difference of two proportions takes
Newcombe's hybrid score interval (method 10 of Newcombe 1998), built from the two Wilson
intervals, so that it too holds at the edges. Both at 95% (z = 1.96).
"""

from __future__ import annotations

import math

from repro.schema.base import Interval

Z95 = 1.959964


def wilson(correct: int, asked: int, z: float = Z95) -> Interval | None:
    """Wilson's 95% interval on `correct / asked`; None when nothing was asked."""
    if asked <= 0:
        return None
    p = correct / asked
    scale = 1 + z * z / asked
    centre = (p + z * z / (2 * asked)) / scale
    half = z * math.sqrt(p * (1 - p) / asked + z * z / (4 * asked * asked)) / scale
    return Interval(low=max(0.0, centre - half), high=min(1.0, centre + half))


def difference(
    b_correct: int, b_asked: int, a_correct: int, a_asked: int
) -> tuple[float, Interval] | None:
    """B - A with Newcombe's 95% interval; None when either asked nothing."""
    wa, wb = wilson(a_correct, a_asked), wilson(b_correct, b_asked)
    if wa is None or wb is None:
        return None
    pa, pb = a_correct / a_asked, b_correct / b_asked
    d = pb - pa
    low = d - math.hypot(pb - wb.low, wa.high - pa)
    high = d + math.hypot(wb.high - pb, pa - wa.low)
    return d, Interval(low=max(-1.0, low), high=min(1.0, high))
