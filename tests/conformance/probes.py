"""The requests the conformance suite sends to both servers, and the shape of what comes back.

A shape flattens a JSON document into {path: kind}: `a.b` for object keys, `a[]` for the
elements of a list (the union over elements), kinds `str`, `number` (int or float: JSON does
not tell them apart), `bool`, `list`, `object` and `null` (compatible with any kind: the
field is optional there).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

TIMEOUT = 60
PROMPT = "Solve the equation 2x + 3 = 7 and explain each step."


@dataclass
class Reply:
    status: int
    body: Any  # parsed JSON, or the text when it is not JSON
    events: list[Any] = field(default_factory=list)  # SSE payloads, "[DONE]" kept as a string


def call(url: str, path: str, body: Any = None, raw: bytes | None = None) -> Reply:
    """One request; a JSON body is sent as application/json, `raw` as it is."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(
        url + path, data=data, headers={"Content-Type": "application/json"} if data else {}
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            status, text = response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    events = [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]
    parsed_events = [e if e == "[DONE]" else json.loads(e) for e in events]
    try:
        parsed: Any = json.loads(text)
    except json.JSONDecodeError:
        parsed = text
    return Reply(status, parsed, parsed_events)


def kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "str"
    return "list" if isinstance(value, list) else "object"


def shape(value: Any, path: str = "") -> dict[str, str]:
    out = {path: kind(value)} if path else {}
    if isinstance(value, dict):
        for key, item in value.items():
            out.update(shape(item, f"{path}.{key}" if path else str(key)))
    elif isinstance(value, list):
        for item in value:
            for sub, k in shape(item, f"{path}[]").items():
                if out.get(sub, "null") == "null":
                    out[sub] = k
    return out


def differences(probe: str, sim: dict[str, str], sglang: dict[str, str]) -> set[str]:
    """`probe path: only SGLang | only the simulator | SGLang KIND, simulator KIND`."""
    found = set()
    for path in sim.keys() | sglang.keys():
        if path not in sim:
            found.add(f"{probe} {path}: only SGLang")
        elif path not in sglang:
            found.add(f"{probe} {path}: only the simulator")
        elif "null" not in (sim[path], sglang[path]) and sim[path] != sglang[path]:
            found.add(f"{probe} {path}: SGLang {sglang[path]}, simulator {sim[path]}")
    return found


def metric_shape(text: str) -> dict[str, str]:
    """`family` -> `type{label,label}` of every sglang: family on a /metrics page."""
    out = {}
    for family in text_string_to_metric_families(text):
        if not family.name.startswith("sglang:"):
            continue
        labels = sorted({k for s in family.samples for k in s.labels if k not in ("le",)})
        out[family.name] = f"{family.type}{{{','.join(labels)}}}"
    return out


def generate(stream: bool) -> dict[str, Any]:
    return {
        "text": PROMPT,
        "stream": stream,
        "sampling_params": {"max_new_tokens": 24, "temperature": 0, "ignore_eos": True},
    }


def chat(spec_details: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "default",
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": 24,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,
    }
    if spec_details:
        body["return_spec_tokens_details"] = True
    return body


def stream_parts(reply: Reply) -> dict[str, Any]:
    """A stream's first and last JSON events, and for chat the last content chunk, the
    `sglext` chunk and the usage chunk (both with empty choices), and whether it ended with
    [DONE]."""
    events = [e for e in reply.events if e != "[DONE]"]
    parts: dict[str, Any] = {"first": events[0], "done": reply.events[-1] == "[DONE]"}
    if "choices" not in events[0]:  # /generate
        parts["last"] = events[-1]
        return parts
    parts["last"] = [e for e in events if e.get("choices")][-1]
    for name in ("sglext", "usage"):
        carrying = [e for e in events if not e.get("choices") and e.get(name)]
        if carrying:
            parts[name] = carrying[-1]
    return parts
