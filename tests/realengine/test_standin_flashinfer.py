"""The flashinfer stand-in the H200 DFLASH run carries (REPRO_STANDINS_EXTRA=flashinfer): the
two renorm ops DFLASH's verify asks for do the math, in SGLang's engine venv; others raise."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from repro.realengine.engine import engine_python

pytestmark = pytest.mark.real_sglang
STANDINS = Path(__file__).resolve().parents[2] / "src" / "repro" / "realengine" / "standins"
PROBE = """
import json, torch, repro_standins
repro_standins.install()
from flashinfer.sampling import top_k_renorm_probs, top_p_renorm_probs
probs = torch.tensor([[0.5, 0.3, 0.15, 0.05], [0.25, 0.25, 0.25, 0.25]])
by_p = top_p_renorm_probs(probs, torch.tensor([0.7, 1.0]))
by_k = top_k_renorm_probs(probs, torch.tensor([1, 3]))
try:
    import flashinfer
    flashinfer.norm.rmsnorm(probs)
    raised = ""
except NotImplementedError as e:
    raised = str(e)
from flashinfer.comm.mnnvl import TorchDistBackend
class Fixed(TorchDistBackend):  # as sglang/srt/layers/flashinfer_comm_fusion.py does
    pass
try:
    Fixed()
    made = ""
except NotImplementedError as e:
    made = str(e)
print(json.dumps({"p": by_p.tolist(), "k": by_k.tolist(), "raised": raised, "made": made}))
"""


def test_renorm_ops_do_the_math_the_rest_raise_and_a_class_can_be_subclassed(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "PYTHONPATH": str(STANDINS), "REPRO_STANDINS_EXTRA": "flashinfer"}
    log = tmp_path / "ops.jsonl"
    env["REPRO_STANDIN_LOG"] = str(log)
    done = subprocess.run(
        [str(engine_python()), "-c", PROBE], env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["p"][0] == pytest.approx([0.625, 0.375, 0.0, 0.0])  # 0.5 + 0.3 reach 0.7
    assert out["p"][1] == pytest.approx([0.25] * 4)
    assert out["k"][0] == pytest.approx([1.0, 0.0, 0.0, 0.0])
    assert sum(out["k"][1]) == pytest.approx(1.0) and out["k"][1].count(0.0) == 1
    assert "flashinfer.norm.rmsnorm is a repro CPU-test stand-in" in out["raised"]
    assert "flashinfer.comm.mnnvl.TorchDistBackend is a repro CPU-test stand-in" in out["made"]
    calls = [line for line in log.read_text().splitlines() if '"call"' in line]
    assert any("top_p_renorm_probs" in line for line in calls)


def test_sglangs_jit_finds_flashinfers_headers_beside_the_stand_in(tmp_path: Path) -> None:
    """With REPRO_FLASHINFER_HEADERS, SGLang's own dependency lookup for its JIT kernels
    (sglang/kernels/jit/utils/deps.py) returns the carried header folders; without, it says
    flashinfer is missing, as it did on the H100 (2026-12-07)."""
    headers = tmp_path / "flashinfer"
    folders = ["include", "csrc", "cutlass/include", "cutlass/tools/util/include"]
    for folder in [*folders, "spdlog/include"]:
        (headers / "data" / folder).mkdir(parents=True)
    probe = (
        "import json, repro_standins\n"
        "repro_standins.install()\n"
        "from sglang.kernels.jit.utils.deps import get_flashinfer_include_paths\n"
        "try:\n"
        "    print(json.dumps(get_flashinfer_include_paths()))\n"
        "except RuntimeError as e:\n"
        "    print(json.dumps(str(e)))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(STANDINS), "REPRO_STANDINS_EXTRA": "flashinfer"}
    answers = []
    for extra in ({"REPRO_FLASHINFER_HEADERS": str(headers)}, {}):
        done = subprocess.run(
            [str(engine_python()), "-c", probe], env={**env, **extra}, capture_output=True,
            text=True, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        answers.append(json.loads(done.stdout.strip().splitlines()[-1]))
    found, missing = answers
    assert found[:2] == [str(headers / "data" / "include"), str(headers / "data" / "csrc")]
    assert len(found) == 5
    assert "Cannot find flashinfer package" in missing
