"""Small stand-ins for the Hub datasets of repro's benchmark sets (repro.bench.prompts.benchsets),
in the repositories' layout and columns: what z-lab's DFlash benchmark reads, a few rows each."""

from __future__ import annotations

import io
import json
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from hubserver.server import HubServer


def parquet(columns: dict[str, list[Any]]) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table(columns), buf)
    return buf.getvalue()


def jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


GSM8K = [f"Natalia sold {i} clips in April and twice as many in May. How many in all?"
         for i in range(1, 5)]  # fmt: skip
MATH500 = [f"Solve for $x$: $x^2 - {i}x = 0$." for i in range(1, 5)]
HUMANEVAL = [f'def add_{i}(x: int) -> int:\n    """Return x + {i}."""\n' for i in range(1, 5)]
MBPP = [f"Write a python function to multiply a number by {i}." for i in range(1, 5)]
MT_BENCH = [[f"Compose a travel blog post about island {i}.", "Rewrite it in rhyme."]
            for i in range(1, 5)]  # fmt: skip


def add_benchmark_datasets(hub: HubServer) -> None:
    """openai/gsm8k, HuggingFaceH4/MATH-500, openai/openai_humaneval,
    google-research-datasets/mbpp and HuggingFaceH4/mt_bench_prompts, small."""
    n = len(GSM8K)
    hub.add_dataset("openai/gsm8k", {
        "README.md": b"# gsm8k",
        "main/test-00000-of-00001.parquet": parquet({"question": GSM8K, "answer": ["#### 3"] * n}),
        "main/train-00000-of-00001.parquet": parquet({"question": ["train"], "answer": ["1"]}),
        "socratic/test-00000-of-00001.parquet": parquet({"question": ["s"], "answer": ["1"]}),
    })  # fmt: skip
    hub.add_dataset("HuggingFaceH4/MATH-500", {
        "README.md": b"# MATH-500",
        "test.jsonl": jsonl([{"problem": p, "solution": "...", "answer": "0", "level": 1}
                             for p in MATH500]),
    })  # fmt: skip
    hub.add_dataset("openai/openai_humaneval", {
        "openai_humaneval/test-00000-of-00001.parquet": parquet({
            "task_id": [f"HumanEval/{i}" for i in range(n)], "prompt": HUMANEVAL,
            "canonical_solution": ["    return x\n"] * n, "entry_point": ["add"] * n}),
    })  # fmt: skip
    hub.add_dataset("google-research-datasets/mbpp", {
        "full/test-00000-of-00001.parquet": parquet({"text": ["full"], "task_id": [1]}),
        "sanitized/test-00000-of-00001.parquet": parquet({
            "task_id": list(range(n)), "prompt": MBPP, "code": ["pass"] * n}),
        "sanitized/train-00000-of-00001.parquet": parquet({"task_id": [9], "prompt": ["train"]}),
        "sanitized/prompt-00000-of-00001.parquet": parquet({"task_id": [8], "prompt": ["shot"]}),
    })  # fmt: skip
    hub.add_dataset("HuggingFaceH4/mt_bench_prompts", {
        "data/train-00000-of-00001.parquet": parquet({
            "prompt": MT_BENCH, "category": ["writing"] * n, "prompt_id": list(range(n))}),
        "raw/question.jsonl": jsonl([{"question_id": 81, "turns": ["raw"]}]),
    })  # fmt: skip
