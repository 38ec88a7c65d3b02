"""The OpenAI routes: chat and completions, streamed and not, and /v1/models."""

from __future__ import annotations

import json
from typing import Any

from .simproc import MODEL, get_json, post_json, request, sse

CHAT = {
    "model": MODEL,
    "messages": [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": [{"type": "text", "text": "Write a haiku about autumn."}]},
    ],
    "max_tokens": 9,
    "ignore_eos": True,
}
USAGE_KEYS = [
    "prompt_tokens",
    "total_tokens",
    "completion_tokens",
    "prompt_tokens_details",
    "reasoning_tokens",
    "completion_tokens_details",
]


def test_models(sim: Any) -> None:
    listing = get_json(sim.url + "/v1/models")
    assert listing["object"] == "list"
    (card,) = listing["data"]
    assert card["id"] == card["root"] == MODEL
    assert card["object"] == "model" and card["owned_by"] == "sglang"
    assert card["max_model_len"] == 32768
    assert get_json(sim.url + f"/v1/models/{MODEL}")["id"] == MODEL
    status, _, raw = request(sim.url + "/v1/models/other")
    assert status == 404 and json.loads(raw)["error"]["code"] == "model_not_found"


def test_chat_non_streaming(sim: Any) -> None:
    status, out = post_json(sim.url + "/v1/chat/completions", CHAT)
    assert status == 200
    assert out["object"] == "chat.completion" and out["model"] == MODEL
    (choice,) = out["choices"]
    assert list(choice) == ["index", "message", "logprobs", "finish_reason", "matched_stop"]
    assert choice["message"]["role"] == "assistant" and choice["message"]["content"]
    assert choice["finish_reason"] == "length"
    assert list(out["usage"]) == USAGE_KEYS
    assert out["usage"]["completion_tokens"] == 9
    assert out["usage"]["total_tokens"] == out["usage"]["prompt_tokens"] + 9
    assert out["metadata"] == {"weight_version": "default", "simulated": True}


def test_chat_streaming_with_usage(sim: Any) -> None:
    body = {**CHAT, "stream": True, "stream_options": {"include_usage": True}}
    status, payloads, raw = sse(sim.url + "/v1/chat/completions", body)
    assert status == 200 and raw.endswith(b"data: [DONE]\n\n")
    chunks = [json.loads(p) for p in payloads[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    first, *content, finish, usage = chunks
    assert first["choices"][0]["delta"] == {
        "reasoning_content": None,
        "role": "assistant",
        "content": "",
    }
    assert all(list(c["choices"][0]["delta"]) == ["reasoning_content", "content"] for c in content)
    assert all(c["choices"][0]["finish_reason"] is None for c in content)
    assert "usage" not in content[0]
    assert finish["choices"][0]["finish_reason"] == "length"
    assert finish["choices"][0]["delta"] == {"reasoning_content": None}
    assert usage["choices"] == [] and list(usage["usage"]) == USAGE_KEYS
    assert usage["usage"]["completion_tokens"] == 9
    text = "".join(c["choices"][0]["delta"]["content"] for c in content)
    _, plain = post_json(sim.url + "/v1/chat/completions", CHAT)
    assert text == plain["choices"][0]["message"]["content"]
    assert len({c["id"] for c in chunks}) == 1


def test_completions_streaming_and_echo(sim: Any) -> None:
    body = {
        "model": MODEL,
        "prompt": "Once upon a time",
        "max_tokens": 5,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    status, payloads, _ = sse(sim.url + "/v1/completions", body)
    assert status == 200 and payloads[-1] == "[DONE]"
    *texts, usage = [json.loads(p) for p in payloads[:-1]]
    assert len(texts) == 5
    assert all(c["object"] == "text_completion" and c["usage"] is None for c in texts)
    assert [c["choices"][0]["finish_reason"] for c in texts] == [None] * 4 + ["length"]
    assert list(texts[0]["choices"][0]) == [
        "index",
        "text",
        "logprobs",
        "finish_reason",
        "matched_stop",
    ]
    # the completions usage chunk is dumped with exclude_none
    assert usage["choices"] == [] and "sglext" not in usage
    assert list(usage["usage"]) == [
        "prompt_tokens",
        "total_tokens",
        "completion_tokens",
        "reasoning_tokens",
    ]
    _, plain = post_json(sim.url + "/v1/completions", {**body, "stream": False, "echo": True})
    (choice,) = plain["choices"]
    assert choice["text"] == "Once upon a time" + "".join(c["choices"][0]["text"] for c in texts)
    assert plain["object"] == "text_completion" and plain["usage"]["completion_tokens"] == 5


def test_openai_request_errors(sim: Any) -> None:
    status, _, raw = request(sim.url + "/v1/chat/completions", raw=b"{", headers={})
    assert status == 400
    assert json.loads(raw)["type"] == "Bad Request"
    status, _, raw = request(
        sim.url + "/v1/chat/completions",
        raw=json.dumps(CHAT).encode(),
        headers={"Content-Type": "text/plain"},
    )
    assert status == 400
    assert "Only 'application/json' is allowed" in json.loads(raw)["message"]
    status, err = post_json(sim.url + "/v1/chat/completions", {"model": MODEL})
    assert status == 400 and err["object"] == "error" and "Field required" in err["message"]
    status, err = post_json(sim.url + "/v1/completions", {"prompt": "x", "max_tokens": 0})
    assert status == 400 and "max_tokens must be positive" in err["message"]
    too_long = {"prompt": "hello", "max_tokens": 100000}
    status, err = post_json(sim.url + "/v1/completions", too_long)
    assert status == 400 and err["type"] == "BadRequestError"
    assert "maximum context length" in err["message"]
