"""The Kimi K2.6 and Qwen3.6-27B twins on one H100 (2026-12-08), SGLang 0.5.23's engine,
`scripts/gpu-engine device build/gpu OUT kimi qwen36`: the records without per-request lines
or server logs (each failed server's last error lines kept), in tests/fixtures/gpu-runs/.

These twins were the scaled ones (Kimi's MLA ranks 32/16/32/32, the drafters' context 4096).
`kimi-qwen36` is the script as it was: five of six servers refused at start, for the two
reasons the kernel-faithful twins now remove (test_twin_kernel_fields.py).
`qwen36-allow-longer-context` is the same call for the Qwen3.6 twin with
SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1: DFLASH block 16 served, read here with the code
repro reads live servers with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.runfolder import RunFolder

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "gpu-runs" / "h100-2026-12-08"
REFUSED = RUNS / "kimi-qwen36"
SERVED = RUNS / "qwen36-allow-longer-context"
BLOCK = 16


def _levels(name: str) -> list[dict[str, object]]:
    levels: list[dict[str, object]] = json.loads(RunFolder(SERVED / name).summary_file.read_text())[
        "levels"
    ]
    return levels


@pytest.mark.parametrize(
    "server", ["kimi-dflash", "kimi-forced-8", "qwen36-dflash", "qwen36-forced-16"]
)
def test_every_scaled_drafter_was_refused_for_its_context_length(server: str) -> None:
    assert f"{server} not ready" in (REFUSED / "steps.txt").read_text()
    error = (REFUSED / f"server-{server}.error.txt").read_text()
    assert "Target model's context_length (262144) is greater than the derived" in error
    assert "context_length (4096)" in error


def test_the_scaled_kimi_twin_failed_in_the_triton_mla_decode_kernel() -> None:
    assert "kimi-plain not ready" in (REFUSED / "steps.txt").read_text()
    error = (REFUSED / "server-kimi-plain.error.txt").read_text()
    assert "CompilationError" in error
    assert "incompatible dimensions at index 1: 32 and 64" in error


def test_the_qwen36_twin_served_dflash_on_triton_and_the_hybrid_linear_backend() -> None:
    backends = (SERVED / "backends.txt").read_text()
    dflash = backends.split("== server-qwen36-dflash")[1].split("==")[0]
    assert "'attention_backend': 'triton'" in dflash
    assert "'speculative_draft_attention_backend': 'triton'" in dflash
    assert "'linear_attn_backend': 'triton'" in dflash
    assert "Using hybrid linear attention backend for hybrid GDN models." in dflash
    assert f"block_size={BLOCK}" in dflash
    assert "yes" in (SERVED / "verify-path.txt").read_text()


@pytest.mark.parametrize("half", ["lo", "hi"])
def test_forced_acceptance_came_back_within_two_percent(half: str) -> None:
    levels = _levels(f"bench-qwen36-forced-{BLOCK}-{half}")
    assert len(levels) == 2 and all(level["valid"] for level in levels)
    for level in levels:
        assert level["accept_length"] == pytest.approx(BLOCK, rel=0.02)


def test_the_random_drafter_accepts_nothing_in_bench_and_accept() -> None:
    for half in ("lo", "hi"):
        for level in _levels(f"bench-qwen36-dflash-generate-{half}"):
            assert level["valid"] and level["accept_length"] == pytest.approx(1.0, abs=0.02)
    accept = json.loads((SERVED / "accept-qwen36-dflash" / "accept.json").read_text())
    [chat] = accept["sets"]
    assert accept["simulated"] is False and chat["prompts"] == 8 and chat["failed"] == 0
    assert chat["accept_length"] == pytest.approx(1.0, abs=0.02)
    assert accept["protocol"]["chat_template"]["thinking_switch"] == "enable_thinking"
    assert accept.get("lossless") is None  # that call had no --check-lossless yet


def test_repro_report_reads_the_qwen36_records_as_a_real_h100() -> None:
    names = sorted(p.name for p in SERVED.glob("bench-*"))
    assert len(names) == 8
    args = ["report", "--format", "json", "--metric", "accept_length"]
    result = CliRunner().invoke(main, [*args, *(str(SERVED / n) for n in names)])
    assert result.exit_code == 0, result.output
    assert result.output.count("H100 80GB HBM3") >= len(names)
    assert "SIMULATED" not in result.output
    plain = _levels("bench-qwen36-plain-generate-lo")[0]["output_throughput"]
    forced = _levels(f"bench-qwen36-forced-{BLOCK}-lo")[0]["output_throughput"]
    assert isinstance(plain, float) and isinstance(forced, float)
    # at c=1, 16 tokens a verify step beat one token a decode step
    assert forced > 5 * plain
