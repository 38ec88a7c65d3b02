"""Real run records for the report tests, measured against the SGLang simulator.

`start_simulator` runs `python -m repro.sim` on a free 127.0.0.1 port; `run_bench` and
`run_accept` run the real `repro bench` / `repro accept` commands against it.
"""

from __future__ import annotations

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

from click.testing import CliRunner

from repro.cli import main

REPO = Path(__file__).resolve().parents[2]


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


def _repro(args: list[str]) -> None:
    """Run a `repro` command in this process (the real CLI, without another interpreter start)."""
    result = CliRunner().invoke(main, args)
    if result.exit_code != 0:
        raise RuntimeError(f"repro {' '.join(args)} failed ({result.exit_code}):\n{result.output}")


def run_bench(recipe: Path, url: str, out: Path, concurrency: str, prompts: int = 6) -> Path:
    """`repro bench RECIPE --url URL --output OUT` with a tiny sweep; returns the run folder."""
    _repro(
        [
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
        ]
    )
    return out


def run_accept(recipe: Path, url: str, out: Path) -> None:
    """`repro accept RECIPE --url URL --output OUT`: accept.json into the bench run `out`."""
    _repro(
        [
            "accept",
            str(recipe),
            "--url",
            url,
            "--prompts",
            "chat,code",
            "-n",
            "3",
            "--max-new-tokens",
            "32",
            "--output",
            str(out),
        ]
    )
