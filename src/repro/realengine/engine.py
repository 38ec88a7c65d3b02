"""SGLang's own engine as a host process: started on a model with a deadline, stopped cleanly.

The real-engine tests and benchmarks run ``python -m sglang.launch_server`` from the
environment ``scripts/ensure-sglang`` makes (``.venv-sglang/``), outside Docker, in its own
process group so that stopping it also stops the scheduler and detokenizer it spawns.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from repro.errors import ReproError
from repro.settings import SGLANG_VENV
from repro.urls import http_status

# What serves a small text model on SGLang 0.5.23's CPU engine (checked on 2 cores): the
# torch-native attention backend, a small KV pool and the Prometheus endpoint.
CPU_ENGINE_ARGS: tuple[str, ...] = (
    "--device", "cpu",
    "--attention-backend", "torch_native",
    "--mem-fraction-static", "0.3",
    "--max-total-tokens", "16384",
    "--enable-metrics",
)  # fmt: skip
CPU_ENGINE_ENV = {"SGLANG_USE_CPU_ENGINE": "1"}
READY_TIMEOUT_S = 300.0
STOP_TIMEOUT_S = 30.0
POLL_S = 1.0


class EngineError(ReproError):
    """SGLang's engine did not start (or is not installed)."""


@dataclass(frozen=True)
class Engine:
    """A running engine: where it answers, its process and its log."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def log_tail(self, lines: int = 20) -> str:
        text = self.log.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])


def engine_python(venv: Path = SGLANG_VENV) -> Path:
    python = venv / "bin" / "python"
    if not python.is_file():
        raise EngineError(
            f"SGLang's engine environment {venv} is not there",
            hint="make it with `scripts/ensure-sglang` (or `make sglang-engine`)",
        )
    return python


def launch_argv(python: Path, model: Path, port: int, extra: Sequence[str] = ()) -> list[str]:
    return [
        str(python), "-m", "sglang.launch_server",
        "--model-path", str(model),
        "--host", "127.0.0.1", "--port", str(port),
        *CPU_ENGINE_ARGS, *extra,
    ]  # fmt: skip


def make_tiny_model(
    out: Path,
    *,
    seed: int = 0,
    drafter: Path | None = None,
    block_size: int | None = None,
    venv: Path = SGLANG_VENV,
) -> Path:
    """Write the seeded tiny Qwen3 (and, with `drafter`, its DFlash drafter of `block_size`,
    else tinymodel.py's default) with the engine's Python, which has the
    transformers/tokenizers that repro does not carry."""
    script = Path(__file__).with_name("tinymodel.py")
    argv = [str(engine_python(venv)), str(script), str(out), "--seed", str(seed)]
    if drafter is not None:
        argv += ["--drafter", str(drafter)]
        if block_size is not None:
            argv += ["--block-size", str(block_size)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise EngineError(
            f"making the tiny model in {out} failed (exit {done.returncode}):\n"
            + done.stderr[-2000:],
        )
    return out


@contextmanager
def running_engine(
    model: Path,
    port: int,
    log: Path,
    *,
    venv: Path = SGLANG_VENV,
    extra_args: Sequence[str] = (),
    env: dict[str, str] | None = None,
    ready_timeout_s: float = READY_TIMEOUT_S,
) -> Iterator[Engine]:
    """Start the CPU engine on `model`, yield it once ``/health`` is 200, stop it on exit.

    ``/health`` answers 200 only after SGLang's own warm-up request has run
    (sglang/srt/entrypoints/http_server.py), so a yielded engine serves.
    """
    argv = launch_argv(engine_python(venv), model, port, extra_args)
    full_env = {**os.environ, **CPU_ENGINE_ENV, **(env or {})}
    with open(log, "wb") as out:
        process = subprocess.Popen(
            argv, env=full_env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    engine = Engine(f"http://127.0.0.1:{port}", process, log)
    try:
        _wait_ready(engine, ready_timeout_s)
        yield engine
    finally:
        stop(engine)


def _wait_ready(engine: Engine, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        code = engine.process.poll()
        if code is not None:
            raise EngineError(
                f"SGLang's engine exited with code {code} before it was ready; its last log "
                f"lines:\n{engine.log_tail()}",
                hint=f"full log: {engine.log}",
            )
        if http_status(f"{engine.url}/health", timeout=5) == 200:
            return
        if time.monotonic() > deadline:
            raise EngineError(
                f"SGLang's engine was not ready after {timeout_s:.0f} s ({engine.url}/health)",
                hint=f"its log: {engine.log}",
            )
        time.sleep(POLL_S)


def stop(engine: Engine, timeout_s: float = STOP_TIMEOUT_S) -> int:
    """SIGTERM the engine's process group (SGLang's own shutdown path), SIGKILL past the
    deadline; returns the server's exit code."""
    group = engine.process.pid
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            break
        try:
            engine.process.wait(timeout=timeout_s)
            break
        except subprocess.TimeoutExpired:
            continue
    _reap_group(group)
    return engine.process.wait()


def _reap_group(group: int) -> None:
    """Children SGLang spawned may outlive the launcher for a moment: kill what is left."""
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        os.killpg(group, signal.SIGKILL)
        time.sleep(0.2)
