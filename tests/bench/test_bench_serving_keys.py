"""A key that shares a bench_serving name means what bench_serving means: a result file SGLang
0.5.23's own `python -m sglang.bench_serving` wrote against tests/bench/chunkserver.py
(tests/fixtures/bench_serving/README.md says how), beside a repro level of the same stream."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from repro.bench.sweep import BenchOptions, run_bench
from repro.bench.target import BenchTarget
from repro.runfolder import RunFolder
from repro.schema.level import Level
from tests.bench.chunkserver import SERVER_ACCEPT_LENGTH, chunk_server

FIXTURE = (
    Path(__file__).parents[1] / "fixtures" / "bench_serving" / "chunkserver-c4-random-ids.json"
)
LATENCIES = [
    f"{stat}_{name}_ms"
    for stat in ("mean", "median", "p90", "p99")
    for name in ("ttft", "tpot", "itl", "e2e_latency")
]
# Keys both write, with bench_serving's meaning (benchmark/serving.py calculate_metrics and
# the result dict; goodput.py)
SAME = {
    "max_concurrency", "duration", "completed", "total_output_tokens", "request_throughput",
    "output_throughput", *LATENCIES, "concurrency", "accept_length", "goodput_slos_ms",
    "request_goodput", "slo_attainment", "slo_attainment_by_metric",
}  # fmt: skip
# bench_serving keys a repro level does not write, and why: the run's arguments and server
# (run.json workload, server_info.json); client-side tokenizer counts (repro counts the
# server's prompt_tokens: total_prompt_tokens, prompt_throughput); spreads repro does not
# compute; per-second peaks
ELSEWHERE = {
    "tag", "backend", "dataset_name", "request_rate", "sharegpt_output_len",
    "random_input_len", "random_output_len", "random_range_ratio", "server_info",
    "total_input_tokens", "total_input_text_tokens", "total_input_vision_tokens",
    "total_output_tokens_retokenized", "input_throughput", "total_throughput",
    *(f"{stat}_{name}_ms" for stat in ("std", "p95") for name in ("ttft", "tpot", "itl",
                                                                   "e2e_latency")),
    "max_itl_ms", "max_output_tokens_per_s", "max_concurrent_requests",
}  # fmt: skip


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    """(bench_serving's result, repro's level) for the fixture's workload."""
    recorded = json.loads(FIXTURE.read_text())
    with chunk_server() as url:
        opts = BenchOptions(
            url=url, concurrencies=[recorded["max_concurrency"]], dataset="random",
            input_len=recorded["random_input_len"], output_len=recorded["random_output_len"],
            prompts=recorded["completed"], slos={"ttft": 60000.0, "tpot": 60000.0},
            runs_dir=tmp_path_factory.mktemp("runs"),
        )  # fmt: skip
        result = run_bench(BenchTarget.from_url(url), opts)
    (level,) = json.loads(RunFolder(result.run_dir).summary_file.read_text())["levels"]
    return recorded, level


def test_every_bench_serving_key_is_the_same_or_not_written(
    both: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    recorded, level = both
    assert set(recorded) <= SAME | ELSEWHERE, set(recorded) - SAME - ELSEWHERE
    assert set(recorded) >= SAME and set(level) >= SAME
    assert not ELSEWHERE & set(level)  # no bench_serving name carries another meaning


def test_the_shared_keys_mean_the_same(both: tuple[dict[str, Any], dict[str, Any]]) -> None:
    recorded, level = both
    for key in ("max_concurrency", "completed", "total_output_tokens", "goodput_slos_ms",
                "slo_attainment", "slo_attainment_by_metric"):  # fmt: skip
        assert level[key] == recorded[key], key
    for doc in (recorded, level):
        # accept_length: the server's avg_spec_accept_length (internal_states[0])
        assert doc["accept_length"] == SERVER_ACCEPT_LENGTH
        # concurrency: achieved, sum(E2E) / duration, at most the configured level
        e2e_sum = doc["mean_e2e_latency_ms"] / 1000.0 * doc["completed"]
        assert doc["concurrency"] == pytest.approx(e2e_sum / doc["duration"])
        assert doc["concurrency"] <= doc["max_concurrency"]
        assert doc["request_throughput"] == pytest.approx(doc["completed"] / doc["duration"])
        assert doc["output_throughput"] == pytest.approx(
            doc["total_output_tokens"] / doc["duration"]
        )
        # goodput.py: every request met the loose SLOs
        assert doc["request_goodput"] == pytest.approx(doc["request_throughput"])
        # ITL per token: a 4-token chunk's gap counts 4 times, a quarter each, so it is well
        # under the gap between the 16 chunks of a stream (per chunk it would be that gap)
        assert doc["median_itl_ms"] * 3 < doc["median_e2e_latency_ms"] / 16


def test_records_from_before_the_renames_load_with_their_meanings() -> None:
    """A summary.json level written before (configured `concurrency`, pooled `accept_length`,
    `goodput`, server prompt tokens as `total_input_tokens`)."""
    old = {
        "concurrency": 4, "repeat": 0, "completed": 8, "duration": 1.0,
        "request_throughput": 8.0, "output_throughput": 512.0, "total_output_tokens": 512,
        "accept_length": 3.5, "goodput": 7.0, "total_input_tokens": 64, "input_throughput": 64.0,
    }  # fmt: skip
    level = Level.model_validate(old)
    assert (level.concurrency, level.achieved_concurrency) == (4, None)
    assert (level.accept_length, level.server_accept_length) == (3.5, None)
    assert level.goodput == 7.0 and level.total_input_tokens == 64
    written = level.model_dump(mode="json")
    assert written["max_concurrency"] == 4 and written["accept_length_pooled"] == 3.5
    assert Level.model_validate(written) == level
