"""accuracy.json: the answers `repro accept --accuracy` scored per prompt set, for the
recipe and its baseline, and whether the recipe fell below the baseline beyond the interval.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from repro.schema.base import Interval

Verdict = Literal["regression", "within noise", "higher", "not comparable"]


class AccuracySet(BaseModel):
    """One prompt set's answers, scored by exact match of the final number."""

    model_config = ConfigDict(extra="allow")

    prompt_set: str
    scorer: str = Field(description="how an answer was read and matched")
    asked: int = Field(description="prompts answered (failed requests are not scored)")
    failed: int = 0
    correct: int
    accuracy: float | None = Field(description="correct / asked; None when nothing was asked")
    ci95: Interval | None = Field(default=None, description="Wilson's 95% score interval")
    expected: list[str] = Field(default_factory=list, description="the key's final numbers")
    answered: list[str | None] = Field(
        default_factory=list,
        description="the final number each response gave, in prompt order (None: none found "
        "or the request failed)",
    )
    correct_per_prompt: list[bool | None] = Field(
        default_factory=list, description="per prompt; None where the request failed"
    )


class AccuracyCheck(BaseModel):
    """B's accuracy minus A's on one prompt set, with Newcombe's 95% interval: B below A
    beyond the interval is a regression."""

    prompt_set: str
    a: str = Field(description="the reference: the baseline, or run A of a compare")
    b: str = Field(description="the run judged")
    a_accuracy: float | None
    b_accuracy: float | None
    difference: float | None = Field(description="b - a")
    ci95: Interval | None = None
    verdict: Verdict


class AccuracyResults(BaseModel):
    """accuracy.json."""

    model_config = ConfigDict(extra="allow")

    recipe_name: str
    simulated: bool = False
    baseline: str | None = Field(default=None, description="the baseline server, if any")
    sets: list[AccuracySet] = Field(default_factory=list, description="the recipe's")
    baseline_sets: list[AccuracySet] = Field(
        default_factory=list, description="the same prompts on the baseline"
    )
    checks: list[AccuracyCheck] = Field(
        default_factory=list, description="recipe (b) against baseline (a), per prompt set"
    )

    @property
    def regressions(self) -> list[AccuracyCheck]:
        return [c for c in self.checks if c.verdict == "regression"]
