"""The SGLang simulator as a real subprocess on 127.0.0.1 (the one allowed stand-in)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHIM = REPO / "src" / "repro" / "sim" / "shim"
DFLASH = [
    "--speculative-algorithm", "DFLASH",
    "--speculative-draft-model-path", "repro-sim/tiny-chat-dflash",
    "--speculative-num-draft-tokens", "8",
]  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class SimServer:
    def __init__(self, log_path: Path, *args: str, profile: str = "demo", **env: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        environ = {
            **os.environ,
            "PYTHONPATH": f"{SHIM}{os.pathsep}{REPO / 'src'}",
            "REPRO_SIM_PROFILE": profile,
            "REPRO_SIM_SEED": "0",
            "REPRO_SIM_LOAD_SECONDS": "0",
            **env,
        }
        argv = [sys.executable, "-m", "sglang.launch_server", "--model-path", "repro-sim/tiny-chat",
                "--host", "127.0.0.1", "--port", str(self.port), *args]  # fmt: skip
        self._log = open(log_path, "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(argv, env=environ, stdout=self._log, stderr=subprocess.STDOUT)
        self._wait()

    def _wait(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"simulator exited: {self.log_path.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.url + "/health_generate", timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"simulator not healthy in {timeout} s: {self.log_path.read_text()}")

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
