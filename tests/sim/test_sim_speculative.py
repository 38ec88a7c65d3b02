"""Speculative decoding: the counters add up the way SGLang defines them."""

from __future__ import annotations

import itertools
import json
from typing import Any

from tests.support.simulator import Simulators

from .simproc import FAST, MODEL, get_json, metric_value, post_json, sse

MATH = "Solve the equation 3x + 7 = 22 and explain each step of the derivation carefully."
RANDOM = "qz3 vv# ..pl x9x9 ]]k mmq@ 77z %rt bb-- zzk7 ,,q"
SPEC_KEYS = [
    "spec_accept_rate",
    "spec_accept_length",
    "spec_num_correct_drafts",
    "spec_num_proposed_drafts",
    "spec_verify_ct",
    "spec_correct_drafts_histogram",
]


def _generate(url: str, text: str, n: int, tokens: int = 64) -> list[dict[str, Any]]:
    body = {
        "text": [f"{text} (variant {i})" for i in range(n)],
        "sampling_params": {"max_new_tokens": tokens, "ignore_eos": True},
    }
    status, outs = post_json(url + "/generate", body)
    assert status == 200
    return [o["meta_info"] for o in outs]


def test_counters_add_up(sim_dflash: Any) -> None:
    metas = _generate(sim_dflash.url, MATH, 12)
    for meta in metas:
        assert [k for k in meta if k.startswith("spec_")] == SPEC_KEYS
        verify, completion = meta["spec_verify_ct"], meta["completion_tokens"]
        assert meta["spec_accept_length"] == completion / verify
        assert meta["spec_num_proposed_drafts"] == verify * (8 - 1)
        assert meta["spec_accept_rate"] == meta["spec_num_correct_drafts"] / (verify * 7)
        hist = meta["spec_correct_drafts_histogram"]
        assert sum(hist) == verify and len(hist) <= 8
        assert sum(k * c for k, c in enumerate(hist)) == meta["spec_num_correct_drafts"]
        # the prefill gives the first token; every verify step 1 + accepted drafts
        assert completion == 1 + verify + meta["spec_num_correct_drafts"]
    # acceptance length of the set: sum(completion_tokens) / sum(spec_verify_ct)
    total = sum(m["completion_tokens"] for m in metas) / sum(m["spec_verify_ct"] for m in metas)
    assert 2.5 < total < 8.0  # demo DFLASH math: 5.5 at block 16, fewer drafts at block 8


def test_spec_fields_only_on_the_finished_chunk(sim_dflash: Any) -> None:
    body = {"text": MATH, "stream": True, "sampling_params": {"max_new_tokens": 40}}
    _, payloads, _ = sse(sim_dflash.url + "/generate", body)
    chunks = [json.loads(p) for p in payloads[:-1]]
    assert all(not any(k.startswith("spec_") for k in c["meta_info"]) for c in chunks[:-1])
    assert "spec_verify_ct" in chunks[-1]["meta_info"]
    # a verify step can emit several tokens at once
    sizes = [len(b["output_ids"]) - len(a["output_ids"]) for a, b in itertools.pairwise(chunks)]
    assert max(sizes) > 1


def test_prompt_category_drives_acceptance(sim_dflash: Any) -> None:
    math = _generate(sim_dflash.url, MATH, 8)
    noise = _generate(sim_dflash.url, RANDOM, 8)

    def accept(metas: list[dict[str, Any]]) -> float:
        return sum(m["completion_tokens"] for m in metas) / sum(m["spec_verify_ct"] for m in metas)

    assert accept(math) > accept(noise) + 1.0
    assert accept(noise) < 1.6  # random-token prompts make the drafter useless


def test_server_side_accept_length(sim_dflash: Any) -> None:
    _generate(sim_dflash.url, MATH, 16, tokens=120)
    info = get_json(sim_dflash.url + "/server_info")
    assert info["speculative_algorithm"] == "DFLASH"
    assert info["speculative_num_draft_tokens"] == 8
    assert info["speculative_num_steps"] == 1 and info["speculative_eagle_topk"] == 1
    state = info["internal_states"][0]
    assert state["avg_spec_accept_length"] > 1.5  # cumulative since boot, per DP rank
    assert metric_value(sim_dflash.url, "sglang:spec_accept_length") > 1.5
    assert metric_value(sim_dflash.url, "sglang:spec_verify_calls_total") > 0


def test_openai_spec_tokens_details(sim_dflash: Any) -> None:
    body = {
        "messages": [{"role": "user", "content": MATH}],
        "max_tokens": 32,
        "ignore_eos": True,
        "return_spec_tokens_details": True,
    }
    status, out = post_json(sim_dflash.url + "/v1/chat/completions", body)
    assert status == 200
    details = out["sglext"]["spec_tokens_details"]
    assert details["spec_num_proposed_drafts"] == details["spec_verify_ct"] * 7
    assert details["spec_accept_length"] == 32 / details["spec_verify_ct"]


def test_streamed_chat_carries_sglext_only_when_asked(sim_dflash: Any) -> None:
    body = {
        "messages": [{"role": "user", "content": MATH}],
        "max_tokens": 16,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    status, payloads, _ = sse(sim_dflash.url + "/v1/chat/completions", body)
    assert status == 200
    assert not any("sglext" in json.loads(p) for p in payloads if p != "[DONE]")
    status, payloads, _ = sse(
        sim_dflash.url + "/v1/chat/completions", {**body, "return_spec_tokens_details": True}
    )
    chunks = [json.loads(p) for p in payloads if p != "[DONE]"]
    (ext,) = [c for c in chunks if "sglext" in c]
    assert ext["choices"] == []  # serving_chat.py: sglext at response level, before usage
    details = ext["sglext"]["spec_tokens_details"]
    assert details["spec_accept_length"] == 16 / details["spec_verify_ct"]
    assert chunks.index(ext) == len(chunks) - 2 and "usage" in chunks[-1]


def test_speculative_server_runs_at_most_48_unless_told(simulator: Simulators) -> None:
    """speculative_hook.py: without --max-running-requests a speculative server runs 48."""
    args = [
        "--model-path", MODEL, "--speculative-algorithm", "DFLASH",
        "--speculative-draft-model-path", "z-lab/Qwen3-0.6B-DFlash",
    ]  # fmt: skip
    capped = simulator(args, FAST)
    info = get_json(capped.url + "/server_info")
    assert info["max_running_requests"] == 48
    assert info["internal_states"][0]["effective_max_running_requests_per_dp"] == 48
    assert "Max running requests is reset to 48" in capped.log()
    chosen = simulator([*args, "--max-running-requests", "96"], FAST)
    info = get_json(chosen.url + "/server_info")
    assert info["max_running_requests"] == 96
    assert info["internal_states"][0]["effective_max_running_requests_per_dp"] == 96
