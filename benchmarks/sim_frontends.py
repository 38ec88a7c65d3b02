"""Which CPU stand-in is the faster way to a demo: the light simulator or SGLang's own front end
with repro's scheduler (docs/conformance.md)? For each, with the same argv (the tiny Qwen3 and
DFlash drafter, DFLASH, --enable-metrics), it prints the seconds from start to the first 200 on
/health_generate, the seconds for `--requests` sequential /generate calls of 24 tokens, and
the server's resident memory (VmRSS of its main process plus its children).

    .venv/bin/python benchmarks/sim_frontends.py [--requests 16]

Needs .venv-sglang (scripts/ensure-sglang).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from repro.realengine.engine import engine_python, make_tiny_model

SRC = Path(__file__).resolve().parents[1] / "src"
SHIM = SRC / "repro" / "sim" / "shim"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_mb(pid: int) -> float:
    done = subprocess.run(["ps", "-o", "rss=", "--ppid", str(pid), "-p", str(pid)],
                          capture_output=True, text=True, check=False)  # fmt: skip
    return sum(int(x) for x in done.stdout.split()) / 1024


def measure(name: str, command: list[str], pythonpath: str, requests: int) -> None:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": pythonpath, "REPRO_SIM_PROFILE": "demo"}
    url = f"http://127.0.0.1:{port}"
    started = time.perf_counter()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen([*command, "--host", "127.0.0.1", "--port", str(port)],
                                env=env, stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            deadline = started + 600
            while time.perf_counter() < deadline:
                try:
                    with urllib.request.urlopen(url + "/health_generate", timeout=5) as r:
                        if r.status == 200:
                            break
                except (urllib.error.URLError, OSError):
                    time.sleep(0.2)
            ready = time.perf_counter() - started
            body = json.dumps({"text": "Solve 2x + 3 = 7.", "sampling_params":
                               {"max_new_tokens": 24, "ignore_eos": True}}).encode()  # fmt: skip
            t0 = time.perf_counter()
            for _ in range(requests):
                req = urllib.request.Request(url + "/generate", body,
                                             {"Content-Type": "application/json"})  # fmt: skip
                urllib.request.urlopen(req, timeout=60).read()
            served = time.perf_counter() - t0
            print(f"{name:>18}: ready in {ready:6.1f} s, {requests} requests in {served:5.2f} s, "
                  f"RSS {rss_mb(proc.pid):6.0f} MB", flush=True)  # fmt: skip
        finally:
            proc.terminate()
            proc.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=16)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="sim-frontends-"))
    target, drafter = root / "qwen3-tiny", root / "qwen3-tiny-dflash"
    make_tiny_model(target, drafter=drafter)
    argv = ["--model-path", str(target), "--device", "cuda", "--speculative-algorithm", "DFLASH",
            "--speculative-draft-model-path", str(drafter), "--enable-metrics"]  # fmt: skip
    measure("light simulator", [sys.executable, "-m", "sglang.launch_server", *argv],
            f"{SHIM}{os.pathsep}{SRC}", args.requests)  # fmt: skip
    measure("SGLang front end", [str(engine_python()), "-m", "repro.sim.sglang_frontend", *argv],
            str(SRC), args.requests)  # fmt: skip


if __name__ == "__main__":
    main()
