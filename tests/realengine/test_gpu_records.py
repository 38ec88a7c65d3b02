"""What `scripts/gpu-engine device` measured on a lent H100 (2026-12-07), kept in
tests/fixtures/h100-gpu-engine-2026-12-07 without the per-request lines: SGLang 0.5.23's
engine serving the tiny Qwen3 with a DFlash drafter of block 8, its sampling verify op built
by SGLang's JIT against the carried flashinfer headers, read with the code repro reads live
servers with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.runfolder import RunFolder

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "h100-gpu-engine-2026-12-07"
BLOCK = 8


def _levels(name: str) -> list[dict[str, object]]:
    levels: list[dict[str, object]] = json.loads(RunFolder(RUN / name).summary_file.read_text())[
        "levels"
    ]
    return levels


def test_the_dflash_server_started_with_the_jit_built_sampling_verify_op() -> None:
    assert "sampling verify op (tree_speculative_sampling_target_only): yes" in (
        (RUN / "verify-path.txt").read_text()
    )
    steps = (RUN / "steps.txt").read_text()
    assert "qwen3-b8-dflash ready" in steps and "accept qwen3-b8-dflash done" in steps
    info = json.loads(
        RunFolder(RUN / "bench-qwen3-b8-dflash-generate-lo").server_info_file.read_text()
    )
    assert (
        info["speculative_algorithm"] == "DFLASH" and info["speculative_num_draft_tokens"] == BLOCK
    )


@pytest.mark.parametrize("half", ["lo", "hi"])
def test_forced_acceptance_comes_back_as_forced(half: str) -> None:
    levels = _levels(f"bench-qwen3-b8-forced-{BLOCK}-{half}")
    assert levels and all(level["valid"] for level in levels)
    for level in levels:
        assert level["accept_length"] == pytest.approx(BLOCK, rel=0.02)


def test_the_random_drafter_is_measured_accepting_nothing_in_bench_and_accept() -> None:
    for half in ("lo", "hi"):
        for level in _levels(f"bench-qwen3-b8-dflash-generate-{half}"):
            assert level["valid"] and level["accept_length"] == pytest.approx(1.0, abs=0.02)
    accept = json.loads((RUN / "accept-qwen3-b8-dflash" / "accept.json").read_text())
    [chat] = accept["sets"]
    assert accept["simulated"] is False and chat["prompts"] == 8 and chat["failed"] == 0
    assert chat["accept_length"] == pytest.approx(1.0, abs=0.02)
    template = accept["protocol"]["chat_template"]  # the twin's own, from the Hub cache
    assert template["thinking_switch"] == "enable_thinking" and template["fallback"] is None


def test_repro_report_reads_the_records_as_a_real_h100() -> None:
    names = [p.name for p in sorted(RUN.glob("bench-*"))]
    args = ["report", "--format", "json", "--metric", "accept_length"]
    result = CliRunner().invoke(main, [*args, *(str(RUN / n) for n in names)])
    assert result.exit_code == 0, result.output
    shown = result.output
    assert shown.count("H100 80GB HBM3") >= len(names) and "SIMULATED" not in shown
    plain = _levels("bench-qwen3-b8-plain-generate-lo")[0]
    forced = _levels(f"bench-qwen3-b8-forced-{BLOCK}-lo")[0]
    # at c=1, 8 tokens a verify step beat one token a decode step
    assert forced["output_throughput"] > 3 * plain["output_throughput"]
