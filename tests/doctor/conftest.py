"""Point the real collectors at fixture captures through real executables.

`fake_nvidia_smi("b200x8")` writes a small shell script that prints the capture of that
machine for the arguments it gets, and sets REPRO_NVIDIA_SMI to it: the code under test runs
it through its ordinary subprocess path.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

GPU_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "gpu"

_SCRIPT = """#!/bin/sh
D='{fixtures}'
T='{tag}'
echo "$*" >> '{log}'
case "$*" in
  "topo -m")
    {topo} ;;
  --query-gpu=*compute_cap*)
    if [ -f "$D/query_gpu_${{T}}_compute_cap.txt" ]; then
      cat "$D/query_gpu_${{T}}_compute_cap.txt"; exit 2
    fi
    cat "$D/query_gpu_$T.csv" ;;
  --query-gpu=*)
    cat "$D/query_gpu_$T.csv" ;;
  "")
    cat "$D/nvidia_smi_$T.txt" ;;
  *)
    echo "fake nvidia-smi: unexpected arguments: $*" >&2; exit 64 ;;
esac
"""

_TOPO_OK = 'cat "$D/topo_m_$T.txt"'
_TOPO_BROKEN = 'echo "Failed to initialize NVML: Driver/library version mismatch"; exit 18'


def write_executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


FakeSmi = Callable[..., Path]


@pytest.fixture
def fake_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeSmi:
    """Factory: fake_nvidia_smi(tag, topo_ok=True) -> the call log; sets REPRO_NVIDIA_SMI."""

    def make(tag: str, topo_ok: bool = True) -> Path:
        log = tmp_path / f"nvidia-smi-{tag}.log"
        script = _SCRIPT.format(
            fixtures=GPU_FIXTURES, tag=tag, log=log, topo=_TOPO_OK if topo_ok else _TOPO_BROKEN
        )
        exe = write_executable(tmp_path / f"nvidia-smi-{tag}", script)
        monkeypatch.setenv("REPRO_NVIDIA_SMI", str(exe))
        return log

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    return make


@pytest.fixture
def gpu_less(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH with no nvidia-smi on it (docker kept when the machine has one)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = shutil.which("docker")
    if docker:
        os.symlink(docker, bin_dir / "docker")
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("REPRO_NVIDIA_SMI", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    return bin_dir
