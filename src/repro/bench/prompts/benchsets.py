"""Named benchmark sets: z-lab's DFlash benchmark protocol, so acceptance can be held against
the drafters' model cards and the DFlash papers' tables.

Each set is a Hub dataset read by repro.bench.prompts.datasets (pinned to its commit when first
used) and formatted as z-lab's `dflash/benchmark.py` formats it (github.com/z-lab/dflash, commit
44947fbf, `DATASETS`): math prompts end with "Please reason step by step, and put your final
answer within \\boxed{}.", HumanEval's prompt is wrapped in "Write a solution to the following
problem and make sure that it passes the tests:" and a python fence, MBPP's prompt and
MT-Bench's first turn go as they are. Its server mode (`_run_server`) applies the chat template
with `enable_thinking`, sends `/flush_cache`, then `concurrency` warmup requests (the set's
first prompts), then measures the next prompts in dataset order (cycling when asked for more
than the set has), non-streaming `/generate` with temperature 0, top_p 1, top_k 1 and
max_new_tokens 2048 at concurrency 1, and reports the mean of the per-request acceptance.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from repro.bench.prompts.datasets import PromptSet, load_hub_dataset

MATH_SUFFIX = "\nPlease reason step by step, and put your final answer within \\boxed{}."
HUMANEVAL_PREFIX = (
    "Write a solution to the following problem and make sure that it passes the tests:\n```python\n"
)
PROTOCOL = "z-lab dflash/benchmark.py"
PROTOCOL_MAX_NEW_TOKENS = 2048
PROTOCOL_CONCURRENCY = 1


class Sampling(TypedDict):
    """The protocol's sampling parameters (z-lab's `_send_sglang`): greedy at temperature 0."""

    temperature: float
    top_p: float
    top_k: int


PROTOCOL_SAMPLING: Sampling = {"temperature": 0.0, "top_p": 1.0, "top_k": 1}


@dataclass(frozen=True)
class BenchSet:
    ref: str  # the Hub dataset (repro.schema.dataset syntax), folder = config, column = field
    before: str = ""
    after: str = ""

    def format(self, text: str) -> str:
        return f"{self.before}{text}{self.after}"


BENCH_SETS: dict[str, BenchSet] = {
    "gsm8k": BenchSet("hf:openai/gsm8k/main:question", after=MATH_SUFFIX),
    "math500": BenchSet("hf:HuggingFaceH4/MATH-500:problem", after=MATH_SUFFIX),
    "humaneval": BenchSet(
        "hf:openai/openai_humaneval:prompt", before=HUMANEVAL_PREFIX, after="\n```"
    ),
    "mbpp": BenchSet("hf:google-research-datasets/mbpp/sanitized:prompt"),
    "mt-bench": BenchSet("hf:HuggingFaceH4/mt_bench_prompts:prompt"),  # a list: the first turn
}


def load_bench_set(
    name: str, *, endpoint: str | None = None, cache_dir: Path | None = None
) -> PromptSet:
    """A named set's prompts, formatted as z-lab's script does, with the dataset's commit."""
    spec = BENCH_SETS[name]
    found = load_hub_dataset(spec.ref, endpoint=endpoint, cache_dir=cache_dir)
    prompts = [spec.format(p) for p in found.prompts]
    source = found.source.model_copy(update={"protocol": PROTOCOL, "benchmark_set": name})
    return PromptSet(name, prompts, source)
