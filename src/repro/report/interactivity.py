"""Throughput at equal interactivity: what a deployment serves per GPU while each user gets a
given speed (output tok/s per user), interpolated between its measured levels.

Two machines are fairly compared here, not at equal concurrency: at the same concurrency a
PCIe box and an NVLink one serve their users at very different speeds (`repro compare A B
--at-interactivity 20,40`, `repro campaign report`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence

from pydantic import BaseModel

from repro.report.records import LoadedRun
from repro.report.timescale import require_one_time_scale
from repro.schema.level import Level


class InteractivityRow(BaseModel):
    tok_s_per_user: float
    a_tok_s_per_gpu: float | None
    b_tok_s_per_gpu: float | None
    ratio: float | None  # B / A


def per_gpu(level: Level, gpus: int) -> float:
    """Output tok/s per GPU (per server when the run used no GPU)."""
    if level.output_throughput_per_gpu is not None:
        return level.output_throughput_per_gpu
    return level.output_throughput / gpus if gpus > 0 else level.output_throughput


def throughput_at(levels: Iterable[Level], gpus: int, tok_s_per_user: float) -> float | None:
    """Tok/s per GPU at `tok_s_per_user`, linear between the two valid levels around it; None
    outside the speeds the levels cover."""
    curve = sorted(
        (lv.output_throughput_per_user, per_gpu(lv, gpus))
        for lv in levels
        if lv.valid and lv.output_throughput_per_user is not None
    )
    for (s0, t0), (s1, t1) in itertools.pairwise(curve):
        if s0 <= tok_s_per_user <= s1:
            share = 0.0 if s1 == s0 else (tok_s_per_user - s0) / (s1 - s0)
            return t0 + share * (t1 - t0)
    if curve and any(math.isclose(s, tok_s_per_user) for s, _ in curve):
        return next(t for s, t in curve if math.isclose(s, tok_s_per_user))
    return None


def compare_at_interactivity(
    a: LoadedRun, b: LoadedRun, speeds: Sequence[float]
) -> list[InteractivityRow]:
    """B against A at each per-user speed (runs at one time scale only)."""
    require_one_time_scale([a, b])
    rows = []
    for speed in speeds:
        ta = throughput_at(a.levels, a.recipe.gpus, speed)
        tb = throughput_at(b.levels, b.recipe.gpus, speed)
        rows.append(
            InteractivityRow(
                tok_s_per_user=speed,
                a_tok_s_per_gpu=ta,
                b_tok_s_per_gpu=tb,
                ratio=tb / ta if ta and tb is not None else None,
            )
        )
    return rows
