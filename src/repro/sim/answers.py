"""Scripted answers, so that the accuracy gate (`repro accept --accuracy`) can be tested on
the simulator: with an answer key the simulator answers the questions it knows, correctly or,
at a rate the test plants, wrongly.

  REPRO_SIM_ANSWER_KEY      a JSON-lines file of {"question": ..., "answer": ...}; a prompt
                            that contains a question is answered " so the answer is N." and
                            the request ends there (N: the answer's number after `####`, else
                            its last number, as gsm8k writes its key)
  REPRO_SIM_WRONG_ANSWERS   the share of keyed prompts answered N + 1 instead (default 0),
                            drawn per request from its own seeded generator: the same prompt
                            gets the same answer on every run, with or without a drafter

Every piece of the answer is in the simulator's vocabulary (textgen), so its text decodes as
written. A prompt the key does not hold is answered with generated text as before.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

KEY_ENV = "REPRO_SIM_ANSWER_KEY"
WRONG_ENV = "REPRO_SIM_WRONG_ANSWERS"
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _number(answer: str) -> str | None:
    _, mark, after = answer.rpartition("####")
    found = _NUMBER.findall((after if mark else answer).replace(",", ""))
    return found[-1] if found else None


def _wrong(number: str) -> str:
    try:
        return format(Decimal(number) + 1, "f")
    except InvalidOperation:
        return number + "1"


@dataclass(frozen=True)
class AnswerKey:
    """Questions with their numbers, and how often to answer wrongly."""

    answers: tuple[tuple[str, str], ...]
    wrong_rate: float = 0.0

    def answer(self, prompt: str, rng: random.Random) -> str | None:
        """The scripted answer text to a prompt holding a known question; else None."""
        for question, number in self.answers:
            if question in prompt:
                given = _wrong(number) if rng.random() < self.wrong_rate else number
                space = "" if given.startswith("-") else " "  # " -" is no vocabulary piece
                return f" so the answer is{space}{given}."
        return None


def key_from_env(env: Mapping[str, str]) -> AnswerKey | None:
    """The key the environment names; ValueError says what is wrong with it."""
    path = env.get(KEY_ENV, "").strip()
    rate_text = env.get(WRONG_ENV, "").strip() or "0"
    if not path:
        return None
    try:
        rate = float(rate_text)
    except ValueError:
        raise ValueError(f"{WRONG_ENV}={rate_text!r} is not a number") from None
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"{WRONG_ENV}={rate_text!r}: expected a share in [0, 1]")
    answers = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise ValueError(f"{KEY_ENV}={path!r}: {e.strerror or e}") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            question, number = str(row["question"]), _number(str(row["answer"]))
        except (ValueError, KeyError, TypeError):
            raise ValueError(f'{path}:{n}: expected {{"question": ..., "answer": ...}}') from None
        if number is None:
            raise ValueError(f"{path}:{n}: the answer holds no number")
        answers.append((question, number))
    return AnswerKey(tuple(answers), rate)
