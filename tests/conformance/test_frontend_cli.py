"""`repro sim serve --frontend sglang`: what a user starts, and the clear errors before it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from tests.conformance.conftest import sglang_venv
from tests.support.ports import free_port


def test_frontend_needs_a_model_and_an_sglang_python(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["sim", "serve", "--frontend", "sglang"])
    assert result.exit_code == 1 and "--frontend sglang needs --model-path" in result.output
    missing = tmp_path / "nope" / "python"
    result = CliRunner().invoke(
        main,
        ["sim", "serve", "--frontend", "sglang", "--python", str(missing), "--",
         "--model-path", str(tmp_path)],
    )  # fmt: skip
    assert result.exit_code == 1 and f"--python {missing}: no Python with SGLang" in result.output
    assert "scripts/ensure-sglang" in result.output


@pytest.mark.real_sglang
def test_frontend_serves_the_speculative_paths(
    tiny_models: tuple[Path, Path], tmp_path: Path
) -> None:
    target, drafter = tiny_models
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPRO_SIM_")}
    repro = str(Path(sys.executable).parent / "repro")
    python = str(sglang_venv() / "bin" / "python")
    with open(tmp_path / "serve.log", "wb") as log:
        proc = subprocess.Popen(
            [repro, "sim", "serve", "--frontend", "sglang", "--python", python,
             "--port", str(port), "--profile", "demo", "--",
             "--model-path", str(target), "--device", "cuda", "--speculative-algorithm",
             "DFLASH", "--speculative-draft-model-path", str(drafter)],
            env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while "fired up" not in (tmp_path / "serve.log").read_text(errors="replace"):
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "not ready in 300 s"
            time.sleep(0.5)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=30) as r:
            info = json.load(r)
        assert info["version"] == "0.5.23" and info["speculative_algorithm"] == "DFLASH"
        assert info["speculative_num_draft_tokens"] == 4  # SGLang read the drafter's block size
        body = json.dumps({"text": "Hello there", "sampling_params": {"max_new_tokens": 8}})
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/generate",
            body.encode(),
            {"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as r:
            meta = json.load(r)["meta_info"]
        assert meta["spec_verify_ct"] >= 1 and "simulated" not in meta
    finally:
        proc.terminate()
        assert proc.wait(60) == 0
