"""`repro doctor` as a user runs it: table or JSON, exit code 1 when a check fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main

DIGEST = "sha256:" + "0123456789abcdef" * 4

IMAGE = f"""
base:
  image: lmsysorg/sglang
  tag: nightly-dev-cu13-20261201-0a1b2c3d
  digest: "{DIGEST}"
sglang_version: "0.5.23"
cuda_version: "13.0"
gpu_architectures: {{archs}}
"""

RECIPE = """
description: Kimi K2.6 EP4 on the PCIe box (test copy)
image: {image}
model:
  repo: moonshotai/Kimi-K2.6
  revision: main
parallelism:
  tp: 8
  ep: 4
topology:
  gpus: 8
  gpu_models: ["RTX PRO 6000"]
  interconnect: pcie
  min_gpu_memory_gb: 96
env:
  NCCL_P2P_LEVEL: PHB
server:
  extra_args: ["--disable-custom-all-reduce"]
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A recipes/ + images/ tree with one GPU recipe per image architecture list."""
    root = tmp_path / "project"
    (root / "recipes").mkdir(parents=True)
    (root / "images").mkdir()
    for image, archs in (("all-archs", '["9.0", "10.0", "10.3", "12.0"]'), ("hopper", '["9.0"]')):
        (root / "images" / f"{image}.yaml").write_text(IMAGE.replace("{archs}", archs))
        (root / "recipes" / f"kimi-{image}.yaml").write_text(RECIPE.format(image=image))
    return root


def run(*args: str):
    return CliRunner().invoke(main, ["doctor", *args], catch_exceptions=False)


def statuses(payload: dict) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for f in payload["findings"]:
        out.setdefault(f["check"], set()).add(f["status"])
    return out


def test_gpu_recipe_on_a_gpu_less_machine_fails_the_gpu_check(gpu_less, project: Path) -> None:
    recipe = str(project / "recipes" / "kimi-all-archs.yaml")
    result = run(recipe, "--json")
    assert result.exit_code == 1, result.output
    payload = json.loads(result.output)
    assert set(payload) == {"recipe", "fingerprint", "requirements", "findings", "nccl", "ok"}
    assert payload["ok"] is False and payload["recipe"] == recipe
    assert payload["requirements"]["gpus"] == 8
    assert payload["requirements"]["architectures"] == ["9.0", "10.0", "10.3", "12.0"]
    assert payload["requirements"]["weights_bytes"] > 500e9  # Kimi K2.6's known size
    fp = payload["fingerprint"]
    assert fp["gpus"] == [] and fp["nvidia_smi"] is None and fp["interconnect"] == "none"
    assert fp["disk"]["free_bytes"] > 0 and fp["docker"] is not None
    (gpus,) = [f for f in payload["findings"] if f["check"] == "gpus"]
    assert gpus["status"] == "fail"
    assert "needs 8 GPUs" in gpus["message"] and "make demo" in gpus["fix"]
    assert statuses(payload)["nvidia-smi"] == {"warn"}


def test_shipped_kimi_recipe_by_name_on_a_gpu_less_machine(
    gpu_less, repo_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_root)
    result = run("kimi26-ep4-dflash", "--json")
    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    assert "base.digest: a placeholder" in result.stderr  # its image is not pinned yet
    assert payload["requirements"]["source"] == "kimi26-ep4-dflash"
    assert "12.0" in payload["requirements"]["architectures"]
    assert statuses(payload)["gpus"] == {"fail"}


def test_simulator_recipe_passes_without_gpus(
    gpu_less, repo_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_root)
    payload = json.loads(run("demo", "--json").output)
    assert payload["requirements"]["gpu_runtime"] == "none"
    assert statuses(payload)["gpus"] == {"pass"}
    assert "gpu-runtime" not in statuses(payload)


def test_gpu_recipe_table_on_a_gpu_less_machine(gpu_less, project: Path) -> None:
    result = run(str(project / "recipes" / "kimi-all-archs.yaml"))
    assert result.exit_code == 1
    assert "nvidia-smi not found" in result.output
    assert "make demo" in result.output
    assert "check(s) failed" in result.output


def test_machine_only_report_without_gpus_passes(gpu_less) -> None:
    result = run()
    assert result.exit_code == 0, result.output
    assert "nvidia-smi not found" in result.output
    payload = json.loads(run("--json").output)
    assert payload["ok"] is True and payload["requirements"] is None
    assert statuses(payload)["nvidia-smi"] == {"warn"}


def test_rtx_pro_6000_box_shows_inventory_matrix_and_nccl_advice(fake_nvidia_smi, project) -> None:
    fake_nvidia_smi("rtxpro6000x8")
    result = run(str(project / "recipes" / "kimi-all-archs.yaml"))
    text = result.output
    assert "RTX PRO 6000" in text
    assert "97887 MiB" in text and "12.0" in text
    assert "pcie-cross-numa" in text and "SYS" in text and "NODE" in text
    assert "NCCL_P2P_LEVEL=PHB" in text and "--disable-custom-all-reduce" in text
    assert "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE=1" in " ".join(text.split())  # 0.5.22+'s own
    payload = json.loads(run(str(project / "recipes" / "kimi-all-archs.yaml"), "--json").output)
    failed = {c for c, s in statuses(payload).items() if "fail" in s}
    # Everything about the GPUs passes; only this machine's own Docker (no NVIDIA runtime, or
    # no engine) and its disk (595 GB of Kimi weights) can fail.
    assert failed <= {"docker", "gpu-runtime", "disk"}
    for check in ("gpus", "gpu-model", "gpu-memory", "interconnect", "architectures", "nccl"):
        assert statuses(payload)[check] == {"pass"}, check
    assert result.exit_code == (1 if failed else 0)


def test_image_without_kernels_for_the_gpus_fails(fake_nvidia_smi, project: Path) -> None:
    fake_nvidia_smi("rtxpro6000x8")
    result = run(str(project / "recipes" / "kimi-hopper.yaml"), "--json")
    assert result.exit_code == 1
    payload = json.loads(result.output)
    (arch,) = [f for f in payload["findings"] if f["check"] == "architectures"]
    assert arch["status"] == "fail" and "sm_120" in arch["message"]


def test_unknown_recipe_is_a_clean_error(gpu_less, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["doctor", str(tmp_path / "nope.yaml")])
    assert result.exit_code != 0
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "error:" in result.output
