"""Real run records for the report tests, measured against the SGLang simulator.

`start_simulator` runs `python -m repro.sim` on a free 127.0.0.1 port; `run_bench` runs the real
`repro bench` against it. `repro accept` is not built yet, so `write_accept` measures the
acceptance results with a small streaming client and writes `accept.json` in the documented
format (docs/run-record.md).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PROMPTS = {
    "chat": "<|user|>Explain how a hash map handles collisions, briefly.<|assistant|>",
    "code": "<|user|>Write a Python function that reverses a linked list.<|assistant|>",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Sim:
    url: str
    proc: subprocess.Popen[bytes]


@contextmanager
def start_simulator(
    args: list[str], profile: str = "demo", log: Path | None = None
) -> Iterator[Sim]:
    port = free_port()
    env = {**os.environ, "REPRO_SIM_PROFILE": profile, "REPRO_SIM_LOAD_SECONDS": "0"}
    out = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "repro.sim", *args, "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"simulator exited with {proc.returncode}: {args}")
            try:
                with urllib.request.urlopen(url + "/health_generate", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("simulator did not become healthy in 30 s")
            time.sleep(0.1)
        yield Sim(url, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if log:
            out.close()  # type: ignore[union-attr]


def run_bench(recipe: Path, url: str, out: Path, concurrency: str, prompts: int = 6) -> Path:
    """`repro bench RECIPE --url URL --output OUT` with a tiny sweep; returns the run folder."""
    result = subprocess.run(
        [
            str(REPO / ".venv/bin/repro"),
            "bench",
            str(recipe),
            "--url",
            url,
            "--concurrency",
            concurrency,
            "--prompts",
            str(prompts),
            "--input-len",
            "32",
            "--output-len",
            "16",
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if result.returncode != 0:
        raise RuntimeError(f"repro bench failed ({result.returncode}):\n{result.stderr[-2000:]}")
    return out


def _get_json(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return dict(json.loads(resp.read()))


def one_request(url: str, prompt: str, max_new_tokens: int) -> dict[str, Any]:
    """A streamed /generate; token counts from the final chunk's meta_info.

    mirrors sglang/srt/managers/tokenizer_manager.py: spec_verify_ct is on the finished output.
    """
    body = json.dumps(
        {
            "text": prompt,
            "sampling_params": {"max_new_tokens": max_new_tokens, "ignore_eos": True},
            "stream": True,
        }
    ).encode()
    req = urllib.request.Request(url + "/generate", body, {"Content-Type": "application/json"})
    meta: dict[str, Any] = {}
    with urllib.request.urlopen(req, timeout=60) as resp:
        for raw in resp:
            line = raw.decode().strip()
            if line.startswith("data:") and line != "data: [DONE]":
                meta = json.loads(line[5:]).get("meta_info") or meta
    return meta


def write_accept(
    url: str, run_dir: Path, sets: tuple[str, ...] = ("chat", "code"), prompts: int = 3
) -> None:
    """`accept.json` (docs/run-record.md) from real requests to the simulator at `url`.

    `repro accept` is not built yet; this measures what it will: per prompt set,
    sum(completion_tokens) / sum(spec_verify_ct) from /generate's final meta_info.
    """
    info = _get_json(url + "/server_info")
    out = []
    for name in sets:
        res = [one_request(url, PROMPTS[name], 32) for _ in range(prompts)]
        comp = sum(r["completion_tokens"] for r in res)
        ver = sum(r["spec_verify_ct"] for r in res)
        out.append(
            {
                "prompt_set": name,
                "prompts": len(res),
                "completion_tokens": comp,
                "spec_verify_ct": ver,
                "accept_length": comp / ver,
                "accept_length_per_prompt": [
                    r["completion_tokens"] / r["spec_verify_ct"] for r in res
                ],
            }
        )
    data = {"simulated": bool(info.get("simulated")), "sets": out}
    tmp = run_dir / "accept.json.tmp"
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(run_dir / "accept.json")
