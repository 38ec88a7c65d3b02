"""Talk HTTP to a real simulator process (helpers for tests/sim; the process itself is
tests.support.simulator.Sim)."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from tests.support.ports import free_port
from tests.support.simulator import PYTHON, SHIM, SRC, Sim

MODEL = "Qwen/Qwen3-0.6B"
# fast but shaped like the real thing: every simulated duration x 0.05
FAST = {"REPRO_SIM_TIME_SCALE": "0.05"}

__all__ = ["FAST", "MODEL", "PYTHON", "SHIM", "SRC", "Sim", "free_port"]


# ---- HTTP helpers ---------------------------------------------------------------------------
def request(
    url: str,
    body: Any = None,
    method: str | None = None,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
) -> tuple[int, dict[str, str], bytes]:
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    hdrs = {"Content-Type": "application/json"} if data is not None else {}
    hdrs.update(headers or {})
    req = urllib.request.Request(url, data=data, headers=hdrs, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def get_json(url: str) -> Any:
    status, _, body = request(url)
    assert status == 200, body
    return json.loads(body)


def post_json(url: str, body: Any) -> tuple[int, Any]:
    status, _, data = request(url, body)
    return status, json.loads(data)


def sse(url: str, body: Any) -> tuple[int, list[str], bytes]:
    """POST and read an SSE stream: (status, data payloads, raw bytes)."""
    parsed = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
    conn.request("POST", parsed.path, json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    raw = resp.read()
    conn.close()
    events = [block for block in raw.decode().split("\n\n") if block]
    payloads = []
    for block in events:
        assert block.startswith("data: "), block
        payloads.append(block[len("data: ") :])
    return resp.status, payloads, raw


def metric_value(url: str, name: str, **labels: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    _, _, body = request(url + "/metrics")
    total = 0.0
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total
