"""`repro accept --accuracy`: the answers of gsm8k-style sets scored for the recipe and for
its baseline, written to accuracy.json as each set ends.

Each response's final number (repro.bench.prompts.answers) is matched exactly against the
key's; a set's accuracy carries Wilson's 95% interval (repro.proportions) and, with a
baseline, the gate's verdict (repro.accuracygate): the recipe below the baseline beyond
Newcombe's interval is a regression. The requests are accept's own (chat template,
temperature 0), so a server without a drafter is scored too: the baseline, or a CPU engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from repro.accuracygate import check_accuracy
from repro.bench.accept.completion import Batch
from repro.bench.prompts.answers import SCORER, final_number
from repro.proportions import wilson
from repro.runfolder import RunFolder
from repro.schema.accuracy import AccuracyResults, AccuracySet

BASELINE = "baseline"


def score_set(name: str, batch: Batch, expected: list[str]) -> AccuracySet:
    """One set's answers against `expected` (one final number per measured prompt)."""
    answered = [final_number(r.text) if r.ok else None for r in batch.results]
    verdicts = [
        (given == key) if r.ok else None
        for r, given, key in zip(batch.results, answered, expected, strict=True)
    ]
    asked = sum(v is not None for v in verdicts)
    correct = sum(v is True for v in verdicts)
    return AccuracySet(
        prompt_set=name,
        scorer=SCORER,
        asked=asked,
        failed=len(verdicts) - asked,
        correct=correct,
        accuracy=correct / asked if asked else None,
        ci95=wilson(correct, asked),
        expected=expected,
        answered=answered,
        correct_per_prompt=verdicts,
    )


@dataclass
class AccuracyRecord:
    """accuracy.json of one accept run, saved after each set (kept sets on --resume)."""

    run_dir: Path
    results: AccuracyResults

    def save_set(self, run: AccuracySet, baseline: AccuracySet | None) -> None:
        self.results.sets.append(run)
        if baseline is not None:
            self.results.baseline_sets.append(baseline)
            name = self.results.baseline or BASELINE
            self.results.checks.append(
                check_accuracy(name, baseline, self.results.recipe_name, run)
            )
        RunFolder(self.run_dir).write_accuracy(self.results)


def open_accuracy(
    run_dir: Path, recipe_name: str, simulated: bool, baseline: str | None
) -> AccuracyRecord:
    """The run's accuracy record: the saved one when resuming, else a new one."""
    saved = RunFolder(run_dir).read_accuracy()
    results = saved or AccuracyResults(
        recipe_name=recipe_name, simulated=simulated, baseline=baseline
    )
    record = AccuracyRecord(run_dir, results)
    RunFolder(run_dir).write_accuracy(results)
    return record
