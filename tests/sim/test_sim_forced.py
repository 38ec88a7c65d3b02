"""Forced acceptance (SGLANG_SIMULATE_ACC_LEN): the simulator gives the forced length, as
SGLang 0.5.23 does, whatever the prompt and the profile's drafter."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.simulator import Simulators

from .simproc import FAST, MODEL, get_json, post_json

RANDOM = "qz3 vv# ..pl x9x9 ]]k mmq@ 77z %rt bb-- zzk7 ,,q"
DFLASH_8 = [
    "--model-path", MODEL,
    "--speculative-algorithm", "DFLASH",
    "--speculative-draft-model-path", "z-lab/Qwen3-0.6B-DFlash",
    "--speculative-dflash-block-size", "8",
]  # fmt: skip


def _metas(url: str, n: int, tokens: int, ignore_eos: bool = True) -> list[dict[str, Any]]:
    body = {
        "text": [f"{RANDOM} ({i})" for i in range(n)],
        "sampling_params": {"max_new_tokens": tokens, "ignore_eos": ignore_eos},
    }
    status, outs = post_json(url + "/generate", body)
    assert status == 200, outs
    return outs


def _accept_length(outs: list[dict[str, Any]]) -> float:
    metas = [o["meta_info"] for o in outs]
    return sum(m["completion_tokens"] for m in metas) / sum(m["spec_verify_ct"] for m in metas)


@pytest.mark.parametrize("length", [1.0, 2.5, 4.0, 8.0])
def test_forced_length_is_the_acceptance(simulator: Simulators, length: float) -> None:
    env = {**FAST, "SGLANG_SIMULATE_ACC_LEN": f"{length:g}"}
    sim = simulator(DFLASH_8, env)
    outs = _metas(sim.url, 16, 400)
    # random-token prompts: the drafter alone would accept almost nothing
    assert _accept_length(outs) == pytest.approx(length, rel=0.02)
    info = get_json(sim.url + "/server_info")
    assert info["sim_forced_acceptance"] == {
        "length": length,
        "method": "match-expected",
        "token_mode": "fixed",
    }
    # "fixed" token mode: every token after the prefill's is id 100, so no EOS ends a request
    assert all(set(o["output_ids"][1:]) == {100} for o in outs)


def test_forced_length_is_clamped_to_the_block(simulator: Simulators) -> None:
    sim = simulator(DFLASH_8, {**FAST, "SGLANG_SIMULATE_ACC_LEN": "12"})
    assert _accept_length(_metas(sim.url, 4, 161)) == pytest.approx(8.0, rel=0.02)


def test_real_draft_tokens_and_multinomial(simulator: Simulators) -> None:
    env = {
        **FAST,
        "SGLANG_SIMULATE_ACC_LEN": "4",
        "SGLANG_SIMULATE_ACC_METHOD": "multinomial",
        "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token",
    }
    outs = _metas(simulator(DFLASH_8, env).url, 16, 400)
    # a normal draw (sd 1) rounded inside [1, 8] around 4: the mean stays near 4
    assert _accept_length(outs) == pytest.approx(4.0, rel=0.05)
    assert all(len(set(o["output_ids"])) > 10 for o in outs)


def test_off_without_speculative_decoding_or_below_zero(simulator: Simulators) -> None:
    plain = simulator(["--model-path", MODEL], {**FAST, "SGLANG_SIMULATE_ACC_LEN": "4"})
    assert get_json(plain.url + "/server_info")["sim_forced_acceptance"] is None
    off = simulator(DFLASH_8, {**FAST, "SGLANG_SIMULATE_ACC_LEN": "-1"})
    assert get_json(off.url + "/server_info")["sim_forced_acceptance"] is None
    assert _accept_length(_metas(off.url, 8, 200)) < 1.6


def test_a_token_mode_sglang_refuses_stops_the_start(simulator: Simulators) -> None:
    env = {**FAST, "SGLANG_SIMULATE_ACC_LEN": "3", "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real"}
    sim = simulator(DFLASH_8, env, wait=False)
    assert sim.wait_exit() == 1
    assert "Invalid SGLANG_SIMULATE_ACC_TOKEN_MODE 'real'" in sim.log()
