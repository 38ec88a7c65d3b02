"""Long real documents: LongBench-v2 (THUDM/LongBench-v2 on the Hub: 503 multiple-choice
questions on documents of 8k to 2M words), as the prompt set `longbench-v2`.

Each row's `context`, `question` and `choice_A`..`choice_D` are put into LongBench-v2's
zero-shot prompt (github.com/THUDM/LongBench, prompts/0shot.txt: the document in `<text>`
tags, the question, the four choices, and the answer format), in file order. The documents
are sent whole: which of them a run sends is chosen by length (`--length-buckets`,
repro.bench.accept.buckets), so documents longer than the server's context are not sent.
"""

from __future__ import annotations

from pathlib import Path

from repro.bench.prompts.datasets import PromptSet, hub_tables
from repro.errors import ReproError
from repro.schema.dataset import LONGBENCH_V2

LONGBENCH_V2_REF = "hf:THUDM/LongBench-v2"
LONGBENCH_V2_COLUMNS = ("context", "question", "choice_A", "choice_B", "choice_C", "choice_D")
LONG_SETS = (LONGBENCH_V2,)

_PROMPT = """Please read the following text and answer the question below.

<text>
{context}
</text>

What is the correct answer to this question: {question}
Choices:
(A) {choice_A}
(B) {choice_B}
(C) {choice_C}
(D) {choice_D}

Format your response as follows: "The correct answer is (insert answer here)"."""


def load_long_set(
    name: str, *, endpoint: str | None = None, cache_dir: Path | None = None
) -> PromptSet:
    """`longbench-v2`'s prompts, pinned to the dataset's commit."""
    found = hub_tables(LONGBENCH_V2_REF, endpoint=endpoint, cache_dir=cache_dir)
    prompts: list[str] = []
    for where, (columns, values) in found.tables:
        missing = [c for c in LONGBENCH_V2_COLUMNS if c not in columns]
        if missing:
            raise ReproError(
                f"{where}: not LongBench-v2's layout (no {', '.join(missing)})",
                hint=f"{LONGBENCH_V2_REF} has the columns {', '.join(LONGBENCH_V2_COLUMNS)}",
            )
        rows = zip(*(values(c) for c in LONGBENCH_V2_COLUMNS), strict=True)
        prompts += [
            _PROMPT.format(**dict(zip(LONGBENCH_V2_COLUMNS, map(str, row), strict=True)))
            for row in rows
        ]
    source = found.source("context").model_copy(update={"benchmark_set": name})
    return PromptSet(name, prompts, source)
