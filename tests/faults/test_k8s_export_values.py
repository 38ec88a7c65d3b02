"""Issue 70: exports hold only values their target accepts. `repro export k8s` and `repro
campaign export k8s` refuse a --namespace, --hub-cache-pvc, --hf-token-secret (name or :KEY)
or --shm-size that Kubernetes would refuse (or read as something else), as a usage error
naming the option and what it expected; nothing is written. What Kubernetes accepts is still
written as given."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from repro.cli import main
from repro.exitcodes import ExitCode
from tests.campaign.demo import demo_campaign
from tests.export.conftest import DIGEST, Project

REFUSED = [
    ("--namespace", "Kube System;$(x)", "a DNS-1123 label"),
    ("--namespace", "-llm", "a DNS-1123 label"),
    ("--shm-size", "lots", "a Kubernetes quantity above 0"),
    ("--shm-size", "-1Gi", "a Kubernetes quantity above 0"),
    ("--hf-token-secret", "x$(HF_TOKEN)", "a DNS-1123 subdomain"),
    ("--hf-token-secret", "hf-token:k y", "a Secret key"),
    ("--hub-cache-pvc", "hub\ncache", "a DNS-1123 subdomain"),
]
ids = [f"{option}={value!r}" for option, value, _ in REFUSED]


def _usage_error(output: str, option: str, expected: str) -> None:
    assert "Traceback" not in output
    assert f"Invalid value for {option}: " in output, output
    assert f"is not {expected}" in output, output


@pytest.mark.parametrize(("option", "value", "expected"), REFUSED, ids=ids)
def test_export_k8s_refuses_a_value_kubernetes_refuses(
    project: Project, option: str, value: str, expected: str
) -> None:
    lock = project.lock("kimi26-tp16-2n")
    out = project.root / "kimi.yaml"
    result = CliRunner().invoke(main, ["export", "k8s", str(lock), option, value, "-o", str(out)])
    assert result.exit_code == ExitCode.USAGE, result.output
    _usage_error(result.output, option, expected)
    assert not out.exists()


@pytest.mark.parametrize(("option", "value", "expected"), REFUSED, ids=ids)
def test_campaign_export_k8s_refuses_a_value_kubernetes_refuses(
    tmp_path: Path, repo_root: Path, option: str, value: str, expected: str
) -> None:
    campaigns = tmp_path / "campaigns"
    result = CliRunner().invoke(
        main,
        ["campaign", "export", "k8s", str(demo_campaign(tmp_path, repo_root)),
         "--bench-image", f"reg.io/team/repro@{DIGEST}", "--results-pvc", "results",
         "--campaigns-dir", str(campaigns), option, value],
    )  # fmt: skip
    assert result.exit_code == ExitCode.USAGE, result.output
    _usage_error(result.output, option, expected)
    assert not campaigns.exists() or not any(campaigns.iterdir())


def test_values_kubernetes_accepts_are_written_as_given(project: Project) -> None:
    lock = project.lock("kimi26-tp16-2n")
    args = ["-n", "llm-serving", "--shm-size", "64Gi", "--hf-token-secret", "hub.token:hf_TOKEN",
            "--hub-cache-pvc", "hf-cache.models"]  # fmt: skip
    result = CliRunner().invoke(main, ["export", "k8s", str(lock), *args])
    assert result.exit_code == 0, result.output
    lws, service = yaml.safe_load_all(result.stdout)
    assert lws["metadata"]["namespace"] == service["metadata"]["namespace"] == "llm-serving"
    pod = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["dshm"]["emptyDir"]["sizeLimit"] == "64Gi"
    assert volumes["hf-cache"]["persistentVolumeClaim"]["claimName"] == "hf-cache.models"
    [token] = [e for e in pod["containers"][0]["env"] if e["name"] == "HF_TOKEN"]
    assert token["valueFrom"]["secretKeyRef"]["name"] == "hub.token"
    assert token["valueFrom"]["secretKeyRef"]["key"] == "hf_TOKEN"
