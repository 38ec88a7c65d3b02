"""Many clients: disconnects leave nothing behind, and 1,000 concurrent streams are served."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from typing import Any

import aiohttp
import pytest

from tests.support.simulator import Simulators

from .simproc import FAST, MODEL, metric_value, post_json


def _wait_idle(url: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (
            metric_value(url, "sglang:num_running_reqs") == 0
            and metric_value(url, "sglang:num_queue_reqs") == 0
        ):
            return
        time.sleep(0.05)
    raise AssertionError("requests still running after their clients left")


def _wait_for_running(url: str, count: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while metric_value(url, "sglang:num_running_reqs") < count:
        assert time.monotonic() < deadline, f"fewer than {count} requests running"
        time.sleep(0.05)


def _send_raw(port: int, path: str, body: dict[str, Any]) -> socket.socket:
    """A POST written straight to a socket, so the test decides when the client leaves."""
    payload = json.dumps(body).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n".encode()
        + f"Content-Length: {len(payload)}\r\n\r\n".encode()
        + payload
    )
    return s


def test_client_disconnect_mid_stream(sim: Any) -> None:
    aborted = metric_value(sim.url, "sglang:num_aborted_requests_total")
    body = {
        "text": "go on forever",
        "stream": True,
        "sampling_params": {"max_new_tokens": 30000, "ignore_eos": True},
    }
    socks = [_send_raw(sim.port, "/generate", body) for _ in range(20)]
    for s in socks:  # streaming has started on every one
        seen = b""
        while b"data: {" not in seen:
            chunk = s.recv(65536)
            assert chunk, seen
            seen += chunk
    # and one plain request whose client gives up while it waits
    plain = _send_raw(sim.port, "/generate", {**body, "stream": False})
    _wait_for_running(sim.url, 21)
    for s in [*socks, plain]:
        s.close()
    _wait_idle(sim.url)
    assert metric_value(sim.url, "sglang:num_aborted_requests_total") == aborted + 21
    status, out = post_json(sim.url + "/generate", {"text": "still here?"})
    assert status == 200 and out["meta_info"]["finish_reason"] is not None


STREAMS = {
    "/generate": {"text": "hi", "stream": True, "sampling_params": {"max_new_tokens": 8}},
    "/v1/chat/completions": {
        "model": MODEL, "messages": [{"role": "user", "content": "hi"}],
        "stream": True, "max_tokens": 8,
    },
    "/v1/completions": {"model": MODEL, "prompt": "hi", "stream": True, "max_tokens": 8},
}  # fmt: skip


@pytest.mark.parametrize("path", list(STREAMS))
def test_a_client_gone_before_the_headers_is_not_a_server_error(
    simulator: Simulators, path: str
) -> None:
    """A client that sends a streaming request and hangs up at once: the stream's headers
    meet a closed connection. That is a client leaving, as it is mid-stream."""
    sim = simulator(["--model-path", MODEL, "--enable-metrics"], FAST)
    for _ in range(10):
        _send_raw(sim.port, path, STREAMS[path]).close()
    _wait_idle(sim.url)
    status, out = post_json(sim.url + "/generate", {"text": "still here?"})
    assert status == 200 and out["meta_info"]["finish_reason"] is not None
    assert "Error handling request" not in sim.log(), sim.log()[-3000:]


@pytest.fixture(scope="module")
def instant(simulator: Simulators) -> Any:
    return simulator(["--model-path", MODEL, "--enable-metrics"], {"REPRO_SIM_PROFILE": "instant"})


async def _streams(url: str, n: int, tokens: int) -> list[int]:
    body = {"stream": True, "sampling_params": {"max_new_tokens": tokens, "ignore_eos": True}}
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def one(i: int) -> int:
            async with session.post(url + "/generate", json={**body, "text": f"stream {i}"}) as r:
                last = None
                async for line in r.content:
                    if line.startswith(b"data: {"):
                        last = line
                    elif line.startswith(b"data: [DONE]"):
                        break
                assert last is not None
                return len(json.loads(last[6:])["output_ids"])

        return await asyncio.gather(*(one(i) for i in range(n)))


def test_a_thousand_concurrent_streams(instant: Any) -> None:
    counts = asyncio.run(asyncio.wait_for(_streams(instant.url, 1000, 16), 120))
    assert counts == [16] * 1000
    _wait_idle(instant.url)
