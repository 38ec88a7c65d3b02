"""Scheduler behaviour seen from outside: DP ranks, KV retraction, parallel sampling, aborts."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from .simproc import get_json, post_json, request, sse


def test_dp_ranks_each_have_a_state(sim_incremental: Any) -> None:
    info = get_json(sim_incremental.url + "/server_info")
    assert info["dp_size"] == 2 and len(info["internal_states"]) == 2
    assert all(s["memory_usage"]["token_capacity"] == 2000 for s in info["internal_states"])


def test_kv_overflow_retracts_and_still_finishes(sim_incremental: Any) -> None:
    body = {
        "text": [f"prompt number {i}" for i in range(10)],
        "sampling_params": {"max_new_tokens": 400, "ignore_eos": True},
    }
    status, outs = post_json(sim_incremental.url + "/generate", body)
    assert status == 200
    assert all(o["meta_info"]["completion_tokens"] == 400 for o in outs)
    assert sum(o["meta_info"]["num_retractions"] for o in outs) > 0  # 5 x 400 > 2000 per rank


def test_parallel_sampling_n(sim: Any) -> None:
    body = {"text": "Pick a color.", "sampling_params": {"max_new_tokens": 6, "n": 3}}
    status, outs = post_json(sim.url + "/generate", body)
    assert status == 200 and [o["index"] for o in outs] == [0, 1, 2]
    assert len({tuple(o["output_ids"]) for o in outs}) == 3  # each sample its own draw
    chat = {"messages": [{"role": "user", "content": "Pick a color."}], "max_tokens": 4, "n": 2}
    status, out = post_json(sim.url + "/v1/chat/completions", chat)
    assert status == 200 and [c["index"] for c in out["choices"]] == [0, 1]
    prompt = out["usage"]["prompt_tokens"]
    assert out["usage"]["total_tokens"] == prompt + out["usage"]["completion_tokens"]


def test_abort_request_finishes_with_abort(sim: Any) -> None:
    body = {
        "text": "abort me",
        "rid": "to-abort",
        "stream": True,
        "sampling_params": {"max_new_tokens": 30000, "ignore_eos": True},
    }
    result: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: result.update(r=sse(sim.url + "/generate", body)))
    thread.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        time.sleep(0.05)
        if (
            request(sim.url + "/abort_request", {"rid": "to-abort"})[0] == 200
            and not thread.is_alive()
        ):
            break
    thread.join(10)
    status, payloads, _ = result["r"]
    assert status == 200 and payloads[-1] == "[DONE]"
    last = json.loads(payloads[-2])["meta_info"]
    assert last["finish_reason"]["type"] == "abort" and last["id"] == "to-abort"
