"""The accuracy gate: one run's accuracy on a prompt set against a reference's (its
baseline without the drafter, or the same lock on another machine).

Speculative decoding is lossless, so a recipe answers as its baseline does; a quantised or
patched kernel that differs between GPU generations need not. B is flagged as a regression
when B - A lies below zero beyond Newcombe's 95% interval (repro.proportions): a difference
the sample cannot tell from zero is "within noise", never a pass by luck of a point estimate.
"""

from __future__ import annotations

from repro.proportions import difference
from repro.schema.accuracy import AccuracyCheck, AccuracySet, Verdict


def check_accuracy(a_name: str, a: AccuracySet, b_name: str, b: AccuracySet) -> AccuracyCheck:
    """B against A on one prompt set (A the reference); not comparable when their answer
    keys differ (other questions, or another count of them)."""
    same_questions = not (a.expected and b.expected) or a.expected == b.expected
    found = difference(b.correct, b.asked, a.correct, a.asked) if same_questions else None
    verdict: Verdict = "not comparable"
    if found is not None:
        interval = found[1]
        verdict = (
            "regression" if interval.high < 0 else "higher" if interval.low > 0 else "within noise"
        )
    return AccuracyCheck(
        prompt_set=b.prompt_set,
        a=a_name,
        b=b_name,
        a_accuracy=a.accuracy,
        b_accuracy=b.accuracy,
        difference=found[0] if found else None,
        ci95=found[1] if found else None,
        verdict=verdict,
    )


def check_runs(
    a_name: str, a_sets: list[AccuracySet], b_name: str, b_sets: list[AccuracySet]
) -> list[AccuracyCheck]:
    """Every prompt set both scored, B against A, in A's order."""
    by_name = {s.prompt_set: s for s in b_sets}
    return [
        check_accuracy(a_name, s, b_name, by_name[s.prompt_set])
        for s in a_sets
        if s.prompt_set in by_name
    ]
