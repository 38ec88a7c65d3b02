"""Requests the real-engine tests send: a /generate and a chat completion of known lengths."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

GENERATE_TOKENS = 6
CHAT_TOKENS = 4


def post(url: str, body: dict[str, Any], timeout: float = 120) -> dict[str, Any]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def generate_and_chat(
    url: str, chat_template_kwargs: dict[str, bool]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """/generate for GENERATE_TOKENS and /v1/chat/completions for CHAT_TOKENS, neither
    stopping at EOS; the two responses."""
    generated = post(
        f"{url}/generate",
        {
            "text": "why is the sky blue",
            "sampling_params": {"max_new_tokens": GENERATE_TOKENS, "ignore_eos": True},
        },
    )
    chat = post(
        f"{url}/v1/chat/completions",
        {
            "model": "tiny",
            "messages": [{"role": "user", "content": "what is the capital of france"}],
            "max_tokens": CHAT_TOKENS,
            "ignore_eos": True,
            "chat_template_kwargs": chat_template_kwargs,
        },
    )
    return generated, chat
