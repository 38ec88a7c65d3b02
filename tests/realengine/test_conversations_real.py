"""A multi-turn level against SGLang 0.5.23's own CPU engine: its radix cache serves each later
turn's history (non-zero cached_tokens), and a flushed level's first turn finds nothing."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from repro.bench import BenchOptions, run_bench
from repro.bench.target import BenchTarget
from repro.realengine.engine import Engine
from repro.runfolder import RunFolder
from repro.schema.conversation import Conversations

pytestmark = pytest.mark.real_sglang

TURNS = 3
THINK_BLOCK_TOKENS = 8  # `<think>\n\n</think>\n\n`, with a margin


def test_later_turns_report_cached_tokens_and_a_flush_empties_the_cache(
    sglang_engine: Engine, tmp_path: Path
) -> None:
    url = sglang_engine.url
    opts = BenchOptions(
        url=url, concurrencies=[1], input_len=16, output_len=8, prompts=2, runs_dir=tmp_path,
        conversation=Conversations(turns=TURNS, cache="flushed"),
    )  # fmt: skip
    result = run_bench(BenchTarget.from_url(url), opts)
    assert result.status == "complete", result.error
    (level,) = result.levels
    talk = level.conversation
    assert talk is not None and talk.cache == "flushed"
    assert level.completed == 2 * TURNS and level.failed == 0
    lines = RunFolder(result.run_dir).requests_file(1, 0).read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    assert rows[0]["turn"] == 0 and rows[0]["cached_tokens"] == 0  # right after /flush_cache
    later = [r for r in rows if r["turn"] > 0]
    assert later and all(r["cached_tokens"] > 0 for r in later)
    # a later turn finds the turn before's prompt, up to the generation prompt's tail that
    # the rendered history does not repeat (Qwen3's empty think block with thinking off)
    for before, after in itertools.pairwise(rows):
        if after["turn"] > 0:
            assert after["cached_tokens"] >= before["prompt_tokens"] - THINK_BLOCK_TOKENS
    assert talk.by_turn[0].mean_cached_tokens < talk.by_turn[-1].mean_cached_tokens
