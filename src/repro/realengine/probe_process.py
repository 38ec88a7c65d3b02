"""The engine dry-start's process: the engine's Python running drystart_probe.py over a list
of recipes, read line by line with deadlines.

The probe prints READY once SGLang is imported, then one RESULT line per recipe. The import
has its deadline, then each recipe its own: one that hangs or ends the process is that
recipe's failure, and the recipes after it go on in a fresh process.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from repro.errors import ReproError
from repro.safetext import clean

PROBE = Path(__file__).with_name("drystart_probe.py")
# Importing SGLang is ~10 s on 2 cores, each recipe ~1 s more; a loaded machine is slower.
IMPORT_DEADLINE_S = 480.0
RECIPE_DEADLINE_S = 120.0
EnvFor = Callable[[Path], dict[str, str]]  # the probe's environment, given its home folder


RESULT = "repro-drystart-result "  # drystart_probe.py's prefix of each result line
READY = "repro-drystart-ready"  # and of the line it prints once SGLang is imported


def _failed(step: str, message: str) -> dict[str, Any]:
    return {"failed": {"step": step, "type": "Deadline", "message": message, "where": ""}}


class _Probe:
    """One process of the engine's Python over `requests`, read line by line with deadlines."""

    def __init__(
        self, python: Path, env: dict[str, str], requests: list[dict[str, object]], home: Path
    ) -> None:
        self.log = (home / "stderr.log").open("w+b")
        self.process = subprocess.Popen(
            [str(python), str(PROBE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            cwd=home,
            env=env,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(requests).encode())
        self.process.stdin.close()
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.process.stdout, selectors.EVENT_READ)
        self.buffer = b""

    def line(self, deadline_s: float) -> str | None:
        """The next line the probe prints, or None at the deadline or its end."""
        assert self.process.stdout is not None
        until = time.monotonic() + deadline_s
        while b"\n" not in self.buffer:
            left = until - time.monotonic()
            if left <= 0 or not self.selector.select(timeout=left):
                return None
            chunk = os.read(self.process.stdout.fileno(), 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode("utf-8", "replace")

    def tagged(self, prefix: str, deadline_s: float) -> str | None:
        """The rest of the next line that starts with `prefix` (SGLang may print its own)."""
        until = time.monotonic() + deadline_s
        while (line := self.line(until - time.monotonic())) is not None:
            if line.startswith(prefix):
                return line[len(prefix) :]
        return None

    def last_error(self) -> str:
        self.log.seek(0)
        lines = [x for x in self.log.read().decode("utf-8", "replace").splitlines() if x.strip()]
        return " ".join(clean(lines[-1]).split()) if lines else "no output"

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.selector.close()
        assert self.process.stdout is not None
        self.process.stdout.close()
        self.log.close()


def _run_from(
    python: Path, version: str, env: EnvFor, requests: list[dict[str, object]]
) -> list[dict[str, Any]]:
    """Results of `requests` from one process, in order, up to and including the first that
    did not finish (its own failure): the caller goes on with the rest in a fresh process."""
    with tempfile.TemporaryDirectory(prefix="repro-drystart-") as home:
        probe = _Probe(python, env(Path(home)), requests, Path(home))
        try:
            if probe.tagged(READY, IMPORT_DEADLINE_S) is None:
                why = (
                    f"it did not import SGLang in {IMPORT_DEADLINE_S:.0f} s"
                    if probe.process.poll() is None
                    else probe.last_error()
                )
                raise ReproError(
                    f"SGLang {version}'s start-up code did not run: {why}",
                    hint=f"run {python} {PROBE} by hand to see why",
                )
            results: list[dict[str, Any]] = []
            for _request in requests:
                text = probe.tagged(RESULT, RECIPE_DEADLINE_S)
                if text is None:
                    if probe.process.poll() is None:
                        message = f"did not finish in {RECIPE_DEADLINE_S:g} s"
                    else:
                        message = f"the start-up code ended: {probe.last_error()}"
                    return [*results, _failed("deadline", message)]
                try:
                    result = json.loads(text)
                except json.JSONDecodeError:
                    result = None
                if not isinstance(result, dict):
                    return [*results, _failed("output", "the start-up code's answer is not JSON")]
                results.append(result)
            return results
        finally:
            probe.close()


def run_engine(
    python: Path, version: str, env: EnvFor, requests: list[dict[str, object]]
) -> list[dict[str, Any]]:
    """Every request's result from the engine's Python: one process while recipes finish in
    time, a fresh one after any that does not."""
    results: list[dict[str, Any]] = []
    while len(results) < len(requests):
        results += _run_from(python, version, env, requests[len(results) :])
    return results
