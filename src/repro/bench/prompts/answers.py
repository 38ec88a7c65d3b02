"""Answer keys of gsm8k-style prompt sets, and the final number of an answer.

A set has a key when its rows carry an `answer` column beside the prompt: the gsm8k
benchmark set (its `answer` ends in `#### 72`), a data file, or a Hub dataset (`hf:...`,
read at the commit its prompts came from). A key's final number is what follows `####`, else
its last number. A response's final number is the last `\\boxed{...}` that holds one (the
benchmark sets ask for it: benchsets.MATH_SUFFIX), else the last number in the text, as
SGLang's own gsm8k benchmark reads it (benchmark/gsm8k/bench_sglang.py `get_answer_value`:
commas removed, the last number), here with a sign and decimals. Numbers match exactly after
normalising (72, 72.0 and 72.00 are the same).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from pathlib import Path

from repro.bench.prompts.datasets import PromptSet, file_table, load_hub_dataset
from repro.errors import ReproError
from repro.schema.dataset import FileSource, HubSource, parse_hf_ref

ANSWER_COLUMN = "answer"
KEY_MARK = "####"
MAX_CHARS = 40  # longer is no answer (a record never holds a server's megabyte of digits)
SCORER = "final number (last \\boxed{}, else last number), exact match"
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")


def _normal(number: str) -> str | None:
    if len(number) > MAX_CHARS:
        return None
    try:
        value = Decimal(number.replace(",", ""))
    except InvalidOperation:
        return None
    text = format(value.normalize(), "f")
    return "0" if text in ("-0", "") else text


def last_number(text: str) -> str | None:
    """The last number in `text`, normalised; None when it holds none."""
    found = _NUMBER.findall(text)
    return _normal(found[-1]) if found else None


def final_number(response: str) -> str | None:
    """What a response answered: the last boxed number, else its last number."""
    for boxed in reversed(_BOXED.findall(response)):
        number = last_number(boxed)
        if number is not None:
            return number
    return last_number(response)


def key_number(answer: str) -> str | None:
    """A key's final number: after `####` (gsm8k), else its last number."""
    _, mark, after = answer.rpartition(KEY_MARK)
    return last_number(after if mark else answer)


def _key_texts(ps: PromptSet) -> list[str] | None:
    """The answer column of the rows the prompts came from; None when the set has none."""
    source = ps.source
    if isinstance(source, HubSource):
        ref = parse_hf_ref(source.pinned).pinned(source.commit, ANSWER_COLUMN)
        try:
            return load_hub_dataset(ref, endpoint=source.endpoint).prompts
        except ReproError:
            return None
    if isinstance(source, FileSource):
        columns, values = file_table(Path(source.path), source.path)
        if ANSWER_COLUMN not in columns:
            return None
        return ["" if v is None else str(v) for v in values(ANSWER_COLUMN)]
    return None


def with_answers(ps: PromptSet) -> PromptSet:
    """`ps` with its key's final numbers, one per prompt; a ReproError when it has no key."""
    texts = _key_texts(ps)
    if texts is None:
        raise ReproError(
            f"prompt set {ps.name!r} has no answer key to score accuracy with",
            hint="--accuracy scores gsm8k-style sets: gsm8k, or a data file or hf: dataset "
            f"with an {ANSWER_COLUMN!r} column beside the prompt",
        )
    if len(texts) != len(ps.prompts):
        raise ReproError(
            f"prompt set {ps.name!r}: {len(texts)} answers for {len(ps.prompts)} prompts",
            hint=f"give every row a prompt and an {ANSWER_COLUMN!r} (no empty ones)",
        )
    numbers = [key_number(t) for t in texts]
    missing = next((i for i, n in enumerate(numbers) if n is None), None)
    if missing is not None:
        raise ReproError(
            f"prompt set {ps.name!r}: answer {missing + 1} holds no number "
            f"({texts[missing][:60]!r})",
            hint="accuracy matches final numbers: give each row a numeric answer",
        )
    ps.answers = [n for n in numbers if n is not None]
    return ps
