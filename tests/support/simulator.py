"""The SGLang simulator as a real subprocess on 127.0.0.1 (the one allowed stand-in).

Servers run as `python -m sglang.launch_server <argv>` with PYTHONPATH = the sglang shim + src,
exactly the way the simulator image starts them; their log goes to a file. Tests start them
through one fixture, `simulator` (tests/conftest.py, a `Simulators`); `Sim` is one process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.support.ports import free_port

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
SHIM = SRC / "repro" / "sim" / "shim"
# The interpreter servers run with: set REPRO_SIM_TEST_PYTHON to e.g. a Python 3.11 with
# aiohttp 3.8.4 (Debian 12's, what the simulator image carries) to test against it.
PYTHON = os.environ.get("REPRO_SIM_TEST_PYTHON") or sys.executable
LAUNCH_SERVER = ("-m", "sglang.launch_server")
TINY_CHAT = ("--model-path", "repro-sim/tiny-chat")
DFLASH = (
    "--speculative-algorithm", "DFLASH",
    "--speculative-draft-model-path", "repro-sim/tiny-chat-dflash",
    "--speculative-num-draft-tokens", "8",
)  # fmt: skip
QUICK = {"REPRO_SIM_SEED": "0", "REPRO_SIM_LOAD_SECONDS": "0"}
"""Seed 0 and no imitated weight loading: what the bench, report and fault tests serve."""


class Sim:
    """One simulator process; `wait_ready()` returns it once /health_generate is 200."""

    def __init__(
        self,
        args: list[str],
        env: dict[str, str] | None,
        log: Path,
        shim: Path | None = SHIM,
        module: tuple[str, ...] = LAUNCH_SERVER,
        python: str = PYTHON,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("REPRO_SIM_")}
        path = os.pathsep.join(str(p) for p in (shim, SRC) if p is not None)
        full_env.update({"PYTHONPATH": path, "REPRO_SIM_PROFILE": "demo"})
        full_env.update(env or {})
        self.argv = [*args, "--host", "127.0.0.1", "--port", str(self.port)]
        self._log = open(log, "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [python, *module, *self.argv],
            env=full_env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout: float = 30.0) -> Sim:
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
        self.stop()
        raise AssertionError(f"simulator not ready in {timeout}s:\n{self.log()}")

    def wait_exit(self, timeout: float = 20.0) -> int:
        try:
            return self.proc.wait(timeout)
        finally:
            self._log.close()

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


class Simulators:
    """Every simulator a test session starts (the `simulator` fixture): a call starts one and
    waits until it is ready; `close` stops those still running and fails when a log holds a
    Python traceback (a simulator that broke while the test only saw a failed request)."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        logs.mkdir(parents=True, exist_ok=True)
        self.started: list[Sim] = []

    def __call__(
        self,
        args: Sequence[str] = TINY_CHAT,
        env: Mapping[str, str] | None = None,
        *,
        wait: bool = True,
        shim: Path | None = SHIM,
        module: tuple[str, ...] = LAUNCH_SERVER,
        python: str = PYTHON,
    ) -> Sim:
        log = self.logs / f"sim{len(self.started)}.log"
        sim = Sim(list(args), dict(env or {}), log, shim, module, python)
        self.started.append(sim)
        return sim.wait_ready() if wait else sim

    def tiny(self, *args: str, profile: str = "demo", **env: str) -> Sim:
        """tiny-chat (`args` added) on `profile`, seed 0, no load delay, `env` added."""
        return self([*TINY_CHAT, *args], {**QUICK, "REPRO_SIM_PROFILE": profile, **env})

    def close(self) -> None:
        for sim in self.started:  # SIGTERM them all first: they shut down in parallel
            if sim.proc.poll() is None:
                sim.proc.terminate()
        for sim in self.started:
            sim.stop()
        broken = [sim.log_path for sim in self.started if "Traceback" in sim.log()]
        assert not broken, f"simulator logs with a traceback: {broken}"
