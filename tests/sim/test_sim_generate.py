"""/generate as SGLang 0.5.23 answers it: shapes, streams, errors."""

from __future__ import annotations

import itertools
import json
import statistics
from typing import Any

import pytest

from repro.sim.profile import load_profile
from repro.sim.request import mean_output_tokens

from .simproc import post_json, request, sse

META_KEYS = [
    "id",
    "finish_reason",
    "prompt_tokens",
    "weight_version",
    "num_retractions",
    "reasoning_tokens",
    "completion_tokens",
    "cached_tokens",
]
PROMPT = "Tell me about the history of the city of Paris in a few sentences."


def test_non_streaming_text(sim: Any) -> None:
    body = {"text": PROMPT, "sampling_params": {"max_new_tokens": 12, "ignore_eos": True}}
    status, headers, raw = request(sim.url + "/generate", body)
    assert status == 200
    assert headers["X-Repro-Simulated"] == "demo"
    out = json.loads(raw)
    assert list(out) == ["text", "output_ids", "meta_info"]
    meta = out["meta_info"]
    assert [k for k in meta if k in META_KEYS] == META_KEYS
    assert meta["finish_reason"] == {"type": "length", "length": 12}
    assert meta["completion_tokens"] == len(out["output_ids"]) == 12
    assert meta["e2e_latency"] > 0
    assert meta["simulated"] is True
    assert isinstance(out["text"], str) and out["text"]
    assert "spec_verify_ct" not in meta  # no speculative algorithm


def test_non_streaming_input_ids_and_natural_stop(sim: Any) -> None:
    ids = list(range(1000, 1040))
    status, out = post_json(sim.url + "/generate", {"input_ids": ids})
    assert status == 200
    meta = out["meta_info"]
    assert meta["prompt_tokens"] == 40
    # default max_new_tokens is 128; the demo's outputs average 128 tokens then stop on EOS
    assert meta["finish_reason"]["type"] in ("stop", "length")
    if meta["finish_reason"]["type"] == "stop":
        assert meta["finish_reason"]["matched"] == 151645 == out["output_ids"][-1]


def test_outputs_that_stop_at_eos_average_what_a_plan_counts_for_them(sim: Any) -> None:
    # a plan's accept stage counts each request at sim.request.mean_output_tokens
    prompts = [[1000 + i, *range(2000, 2030)] for i in range(400)]
    body = {"input_ids": prompts, "sampling_params": {"max_new_tokens": 64}}
    status, outs = post_json(sim.url + "/generate", body)
    assert status == 200
    lengths = [o["meta_info"]["completion_tokens"] for o in outs]
    assert max(lengths) == 64 and min(lengths) < 32  # some cut at the limit, some stopped
    expected = mean_output_tokens(load_profile("demo").mean_output_tokens, 64)
    assert statistics.mean(lengths) == pytest.approx(expected, rel=0.05)
    assert expected < 64 * 0.85  # far from min(limit, mean): the cut is what it models


def test_stream_cumulative(sim: Any) -> None:
    body = {
        "text": PROMPT,
        "stream": True,
        "sampling_params": {"max_new_tokens": 8, "ignore_eos": True},
    }
    status, payloads, raw = sse(sim.url + "/generate", body)
    assert status == 200
    assert raw.endswith(b"data: [DONE]\n\n")
    assert payloads[-1] == "[DONE]"
    chunks = [json.loads(p) for p in payloads[:-1]]
    assert len(chunks) == 8  # one token per decode step, stream_interval 1
    for before, after in itertools.pairwise(chunks):
        assert after["text"].startswith(before["text"])
        assert after["output_ids"][: len(before["output_ids"])] == before["output_ids"]
    assert all(c["meta_info"]["finish_reason"] is None for c in chunks[:-1])
    assert all("e2e_latency" not in c["meta_info"] for c in chunks[:-1])
    assert "response_sent_to_client_ts" in chunks[0]["meta_info"]
    last = chunks[-1]
    assert last["meta_info"]["finish_reason"] == {"type": "length", "length": 8}
    assert len(last["output_ids"]) == last["meta_info"]["completion_tokens"] == 8
    # the same prompt, not streamed, gives the same text (deterministic with the seed)
    _, plain = post_json(sim.url + "/generate", {**body, "stream": False})
    assert plain["text"] == last["text"] and plain["output_ids"] == last["output_ids"]


def test_stream_incremental(sim: Any, sim_incremental: Any) -> None:
    body = {
        "text": PROMPT,
        "stream": True,
        "sampling_params": {"max_new_tokens": 10, "ignore_eos": True},
    }
    _, payloads, _ = sse(sim_incremental.url + "/generate", body)
    chunks = [json.loads(p) for p in payloads[:-1]]
    assert all(len(c["output_ids"]) == 1 for c in chunks)
    text = "".join(c["text"] for c in chunks)
    ids = [i for c in chunks for i in c["output_ids"]]
    _, plain = post_json(sim.url + "/generate", {**body, "stream": False})
    assert (text, ids) == (plain["text"], plain["output_ids"])
    assert chunks[-1]["meta_info"]["completion_tokens"] == 10


def test_batch_returns_list_with_index(sim: Any) -> None:
    body = {
        "text": ["First prompt here.", "Second prompt here."],
        "sampling_params": {"max_new_tokens": 3},
    }
    status, outs = post_json(sim.url + "/generate", body)
    assert status == 200
    assert [o["index"] for o in outs] == [0, 1]
    assert all(o["meta_info"]["completion_tokens"] <= 3 for o in outs)


def test_malformed_json_gets_sglang_error_shape(sim: Any) -> None:
    status, _, raw = request(sim.url + "/generate", raw=b'{"text": "unterminated')
    assert status == 400
    err = json.loads(raw)
    assert list(err) == ["object", "message", "type", "param", "code"]
    assert err["object"] == "error" and err["type"] == "Bad Request"
    assert err["param"] is None and err["code"] == 400
    assert "JSON decode error" in err["message"]


def test_contract_errors_and_ignored_fields(sim: Any) -> None:
    status, err = post_json(
        sim.url + "/generate", {"text": "hi", "sampling_params": {"max_tokens": 3}}
    )
    assert status == 400
    assert err["error"].startswith("unknown field `max_tokens`, expected one of `max_new_tokens`")
    status, err = post_json(
        sim.url + "/generate", {"text": "hi", "sampling_params": {"max_new_tokens": "3"}}
    )
    assert (status, err) == (400, {"error": 'invalid type: string "3", expected i64'})
    # unknown top-level keys are ignored, as SGLang's contract says
    status, out = post_json(
        sim.url + "/generate",
        {"text": "hi", "frobnicate": 1, "sampling_params": {"max_new_tokens": 2}},
    )
    assert status == 200 and out["meta_info"]["completion_tokens"] <= 2


def test_serving_errors(sim: Any) -> None:
    status, err = post_json(sim.url + "/generate", {"sampling_params": {"max_new_tokens": 2}})
    assert status == 400
    assert err == {
        "error": {"message": "Either text, input_ids or input_embeds should be provided."}
    }
    # streamed: HTTP 200, an error chunk, then [DONE] (http_server.py stream_results)
    status, payloads, _ = sse(sim.url + "/generate", {"stream": True})
    assert status == 200 and payloads[-1] == "[DONE]"
    chunk = json.loads(payloads[0])
    assert chunk["error"]["type"] == "invalid_request_error" and chunk["error"]["code"] == 400
    status, err = post_json(
        sim.url + "/generate", {"text": "hello", "sampling_params": {"max_new_tokens": 40000}}
    )
    assert status == 400
    assert "exceeds the model's maximum context length of 32768 tokens" in err["error"]["message"]


def test_stop_string_and_min_tokens(sim: Any) -> None:
    body = {"text": PROMPT, "sampling_params": {"max_new_tokens": 30, "ignore_eos": True}}
    _, full = post_json(sim.url + "/generate", body)
    words = full["text"].split()
    stop = " " + words[5]
    body["sampling_params"]["stop"] = stop
    _, cut = post_json(sim.url + "/generate", body)
    assert cut["meta_info"]["finish_reason"] == {"type": "stop", "matched": stop}
    assert stop not in cut["text"] and full["text"].startswith(cut["text"])


def test_zero_new_tokens_is_prefill_only(sim: Any) -> None:
    status, out = post_json(
        sim.url + "/generate", {"text": PROMPT, "sampling_params": {"max_new_tokens": 0}}
    )
    assert status == 200 and out["output_ids"] == [] and out["text"] == ""
    assert out["meta_info"]["finish_reason"] == {"type": "length", "length": 0}
    assert out["meta_info"]["completion_tokens"] == 0
