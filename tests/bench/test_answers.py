"""Reading answers: the final number of a response and of a gsm8k key, answer keys of data
files, and the intervals the accuracy gate judges with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.accuracygate import check_accuracy
from repro.bench.prompts.answers import final_number, key_number, with_answers
from repro.bench.prompts.sets import load_prompt_set
from repro.errors import ReproError
from repro.proportions import difference, wilson
from repro.schema.accuracy import AccuracySet


@pytest.mark.parametrize(
    ("response", "number"),
    [
        ("so 3 + 4 = 7", "7"),  # SGLang's gsm8k benchmark: the last number
        ("The total is $1,234.", "1234"),  # commas go
        ("first \\boxed{18} then a stray 5", "18"),  # the boxed answer wins
        ("\\boxed{x} but the answer is -2.50", "-2.5"),  # a box without a number does not
        ("72.00 apples", "72"),  # 72, 72.0 and 72.00 match
        ("no number here", None),
        ("9" * 100_000, None),  # a server's megabyte of digits is no answer to record
    ],
)
def test_the_final_number_of_a_response(response: str, number: str | None) -> None:
    assert final_number(response) == number


def test_the_final_number_of_a_gsm8k_key() -> None:
    assert key_number("She sold 48/2 = <<48/2=24>>24 clips in May.\n#### 72") == "72"
    assert key_number("18") == "18"
    assert key_number("#### 1,000") == "1000"


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_file_with_an_answer_column_is_keyed(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "qa.jsonl", [
        {"question": "How many legs have 3 cats?", "answer": 12},  # numbers as JSON numbers
        {"question": "Half of 9?", "answer": "#### 4.5"},
    ])  # fmt: skip
    assert with_answers(load_prompt_set(str(path))).answers == ["12", "4.5"]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"question": "Q?"}], "has no answer key"),
        ([{"question": "Q?", "answer": "many"}], "answer 1 holds no number"),
        ([{"question": "Q?", "answer": "1"}, {"question": " ", "answer": "2"}], "2 answers for 1"),
    ],
)
def test_a_set_the_gate_cannot_score_is_one_clear_error(
    tmp_path: Path, rows: list[dict[str, object]], message: str
) -> None:
    path = _jsonl(tmp_path / "qa.jsonl", rows)
    with pytest.raises(ReproError, match=message) as err:
        with_answers(load_prompt_set(str(path)))
    assert err.value.hint


def test_wilson_holds_at_the_edges() -> None:
    half = wilson(5, 10)
    assert half is not None and half.low == pytest.approx(0.2366, abs=1e-4)
    assert half.high == pytest.approx(0.7634, abs=1e-4)
    none = wilson(0, 10)  # the normal interval would be [0, 0]
    assert none is not None and none.low == 0 and none.high == pytest.approx(0.2775, abs=1e-4)
    assert wilson(0, 0) is None


def _scored(correct: int, asked: int) -> AccuracySet:
    return AccuracySet(
        prompt_set="gsm8k", scorer="test", asked=asked, correct=correct,
        accuracy=correct / asked, ci95=wilson(correct, asked),
    )  # fmt: skip


def test_the_gate_flags_only_a_drop_beyond_the_interval() -> None:
    found = difference(12, 24, 24, 24)
    assert found is not None and found[0] == -0.5 and found[1].high < 0
    assert check_accuracy("base", _scored(24, 24), "run", _scored(12, 24)).verdict == "regression"
    # one answer fewer in 24 is noise, not a regression
    assert check_accuracy("base", _scored(24, 24), "run", _scored(23, 24)).verdict == (
        "within noise"
    )
    assert check_accuracy("base", _scored(5, 24), "run", _scored(22, 24)).verdict == "higher"


def test_sets_of_other_questions_are_not_compared() -> None:
    a, b = _scored(24, 24), _scored(2, 24)
    a.expected, b.expected = ["1"] * 24, ["2"] * 24
    assert check_accuracy("a", a, "b", b).verdict == "not comparable"
