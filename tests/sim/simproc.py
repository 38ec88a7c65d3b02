"""Start the simulator for real and talk HTTP to it (helpers for tests/sim).

Servers run as `python -m sglang.launch_server <argv>` with PYTHONPATH = the sglang shim + src,
exactly the way the simulator image starts them; their log goes to a file.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
SHIM = SRC / "repro" / "sim" / "shim"
MODEL = "Qwen/Qwen3-0.6B"
# fast but shaped like the real thing: every simulated duration x 0.05
FAST = {"REPRO_SIM_TIME_SCALE": "0.05"}
# The interpreter servers run with: set REPRO_SIM_TEST_PYTHON to e.g. a Python 3.11 with
# aiohttp 3.8.4 (Debian 12's, what the simulator image carries) to test against it.
PYTHON = os.environ.get("REPRO_SIM_TEST_PYTHON") or sys.executable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Sim:
    def __init__(
        self,
        args: list[str],
        env: dict[str, str] | None,
        log: Path,
        shim: Path = SHIM,
        module: tuple[str, ...] = ("-m", "sglang.launch_server"),
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("REPRO_SIM_")}
        full_env.update({"PYTHONPATH": f"{shim}{os.pathsep}{SRC}", "REPRO_SIM_PROFILE": "demo"})
        full_env.update(env or {})
        self.argv = [*args, "--host", "127.0.0.1", "--port", str(self.port)]
        self._log = open(log, "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [PYTHON, *module, *self.argv],
            env=full_env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout: float = 20.0) -> Sim:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"simulator exited {self.proc.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(self.url + "/health_generate", timeout=2) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.05)
        raise AssertionError(f"simulator not ready in {timeout}s:\n{self.log()}")

    def wait_exit(self, timeout: float = 20.0) -> int:
        try:
            return self.proc.wait(timeout)
        finally:
            self._log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


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
