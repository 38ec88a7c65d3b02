"""Assumed stays assumed: the one rule by which what a point's numbers assume reaches every
verdict they feed.

A predicted point (and one the simulator served) stands on its profile's inputs, and some of
them are assumed, not measured (`repro.campaign.caveats.assumed_inputs` names them: a profile
derived by a rule, a configuration no measurement covers, an assumed prefill speed). Every
verdict that point enters (an SLO's winner, a drafter's crossover against its baseline) names
them after its text, `[assumed: ...]`, and carries them in its `assumed` field, so the
terminal, `--json` and the page say the same. A 95% interval is stated only on a verdict
that stands on nothing assumed: the spread of a simulator's draws from an assumed acceptance
is no uncertainty of anything measured.

A point the simulator served is what its plan predicted on the same profile: it carries the
plan's caveats and assumed inputs; a point measured on GPUs carries none. What served it is
named by what its profile is (its own provenance), never by the run's configuration, so one
profile is never "calibrated" and "extrapolated" at once; what a configuration extrapolates
is one of its assumed inputs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from repro.schema.campaign import PlannedPoint

LABEL = "assumed"


def inputs(*assumed: Iterable[str]) -> list[str]:
    """The assumed inputs of the points a verdict stands on, each once, in order."""
    return list(dict.fromkeys(a for each in assumed for a in each))


def labelled(text: str, assumed: Iterable[str]) -> str:
    """`text [assumed: a; b]`, or `text` where nothing is assumed."""
    named = inputs(assumed)
    return f"{text} [{LABEL}: {'; '.join(named)}]" if named else text


def interval_stated(assumed: Iterable[str]) -> bool:
    """Whether a verdict may state a confidence interval: only on measured inputs."""
    return not inputs(assumed)


def simulated_source(
    profile: str | None, planned: PlannedPoint, simulated: bool
) -> tuple[str, list[str]]:
    """A run point's source line and assumed inputs: the plan's caveats and assumptions where
    the simulator served it on the plan's profile; nothing assumed where GPUs measured it."""
    if not simulated:
        return "measured", []
    if profile != planned.profile:
        return f"simulated ({profile})", [f"every number of simulator profile {profile}"]
    return "; ".join([f"simulated ({profile})", *planned.caveats]), list(planned.assumed)


def engine(served_by: str, provenance: str | None) -> str:
    """`sim P (calibrated), time-scale X` with the kind of the profile's own `provenance`."""
    kind = (provenance or "").split(":", 1)[0]
    if kind not in ("calibrated", "extrapolated"):
        return served_by
    return re.sub(r" \((calibrated|extrapolated)\)", f" ({kind})", served_by, count=1)
