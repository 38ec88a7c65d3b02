"""Docker's GPU runtimes, the Hub cache location and the command runner."""

from __future__ import annotations

import json
from pathlib import Path

from repro.doctor import CommandResult, run_command
from repro.doctor.host import parse_docker_info
from repro.hub.cache import hub_cache_dir

GPU_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "gpu"


def info_result(data: dict | str, returncode: int = 0) -> CommandResult:
    text = data if isinstance(data, str) else json.dumps(data)
    return CommandResult(("docker", "info", "--format", "{{json .}}"), returncode, text, "")


def test_engine_with_the_nvidia_runtime() -> None:
    text = (GPU_FIXTURES / "docker_info_nvidia_runtime.json").read_text()
    info = parse_docker_info(info_result(text), "/usr/bin/docker")
    assert info.available and info.server_version == "28.1.1"
    assert info.nvidia_runtime and info.gpu_capable
    assert info.runtimes == ["io.containerd.runc.v2", "nvidia", "runc"]


def test_engine_with_nvidia_cdi_specs(tmp_path: Path) -> None:
    spec_dir = tmp_path / "cdi"
    spec_dir.mkdir()
    data = {"ServerVersion": "28.1.1", "Runtimes": {"runc": {}}, "CDISpecDirs": [str(spec_dir)]}
    assert not parse_docker_info(info_result(data)).nvidia_cdi
    (spec_dir / "nvidia.yaml").write_text('cdiVersion: 0.5.0\nkind: "nvidia.com/gpu"\n')
    info = parse_docker_info(info_result(data))
    assert info.nvidia_cdi and not info.nvidia_runtime and info.gpu_capable


def test_stopped_engine_is_reported_not_raised() -> None:
    down = {"ServerErrors": ["Cannot connect to the Docker daemon at unix:///var/run/docker.sock."]}
    info = parse_docker_info(info_result(down, returncode=1))
    assert not info.available
    assert info.error is not None and "Cannot connect" in info.error
    assert not parse_docker_info(info_result("not json", returncode=1)).available


def test_hub_cache_follows_huggingface_hub_precedence() -> None:
    home = {"HOME": "/home/u"}
    assert hub_cache_dir(home) == Path("/home/u/.cache/huggingface/hub")
    assert hub_cache_dir({**home, "XDG_CACHE_HOME": "/x"}) == Path("/x/huggingface/hub")
    assert hub_cache_dir({**home, "HF_HOME": "/data/hf"}) == Path("/data/hf/hub")
    both = {**home, "HF_HOME": "/data/hf", "HF_HUB_CACHE": "/fast/hub"}
    assert hub_cache_dir(both) == Path("/fast/hub")


def test_runner_reports_missing_executables_and_timeouts(tmp_path: Path) -> None:
    missing = run_command([str(tmp_path / "nvidia-smi")], timeout=5)
    assert missing.returncode == 127 and not missing.ok
    slow = run_command(["sleep", "5"], timeout=0.2)
    assert slow.returncode is None and "timed out" in slow.describe_failure()
    ok = run_command(["echo", "hi"], timeout=5)
    assert ok.ok and ok.stdout == "hi\n"
