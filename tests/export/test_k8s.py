"""`repro export k8s`: LeaderWorkerSet / Deployment + Service, valid against the real schemas,
running the recipe's exact command on the lock's image digest."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from repro.cli import main
from repro.exitcodes import ExitCode
from repro.export import ExportError, K8sOptions, k8s_manifests, render_k8s
from repro.lock import load_locked
from repro.recipe import render_server_argv
from repro.recipe.images import catalog_for_recipe

from .conftest import DIGEST, PUSHED_REPOSITORY, K8sSchemas, Project, errors_of

PINNED = f"{PUSHED_REPOSITORY}@{DIGEST}"


def _containers(lws: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    tpl = lws["spec"]["leaderWorkerTemplate"]
    return tpl["leaderTemplate"]["spec"]["containers"][0], tpl["workerTemplate"]["spec"][
        "containers"
    ][0]


def test_lws_validates_against_crd_and_core_schemas(
    project: Project, lws_validator: Any, k8s_schemas: K8sSchemas
) -> None:
    lock = project.lock("kimi26-tp16-2n")
    lws, service = k8s_manifests(load_locked(str(lock)), K8sOptions(namespace="llm"))
    assert (lws["apiVersion"], lws["kind"]) == ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet")
    assert errors_of(lws_validator, lws) == []
    # Both pod templates are also valid core/v1 PodTemplateSpecs (strict: no unknown field).
    pod_template = k8s_schemas.validator("core.v1.PodTemplateSpec")
    for role in ("leaderTemplate", "workerTemplate"):
        assert errors_of(pod_template, lws["spec"]["leaderWorkerTemplate"][role]) == []
    assert errors_of(k8s_schemas.validator("Service"), service) == []


def test_schema_validation_catches_mistakes(
    project: Project, lws_validator: Any, k8s_schemas: K8sSchemas
) -> None:
    """The validators are strict enough to catch what a wrong exporter would produce."""
    lws, service = k8s_manifests(load_locked(str(project.lock("kimi26-tp16-2n"))))
    bad = copy.deepcopy(lws)
    bad["spec"]["leaderWorkerTemplate"]["size"] = "2"
    bad["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["gpus"] = 8
    problems = errors_of(lws_validator, bad)
    assert any("size" in p and "integer" in p for p in problems)
    assert any("'gpus' was unexpected" in p for p in problems)
    bad_service = copy.deepcopy(service)
    bad_service["spec"]["ports"][0]["port"] = "http"
    assert errors_of(k8s_schemas.validator("Service"), bad_service)


def test_lws_runs_the_rendered_command_on_every_node(project: Project) -> None:
    locked = load_locked(str(project.lock("kimi26-tp16-2n")))
    lws, service = k8s_manifests(locked, K8sOptions(namespace="llm"))
    tpl = lws["spec"]["leaderWorkerTemplate"]
    assert tpl["size"] == 2 and lws["spec"]["replicas"] == 1
    leader, worker = _containers(lws)
    for c in (leader, worker):
        assert c["image"] == PINNED  # the pushed digest from the lock, no tag
        assert c["command"] == ["python3", "-m", "sglang.launch_server"]
        args = c["args"]
        assert args[args.index("--nnodes") + 1] == "$(LWS_GROUP_SIZE)"
        assert args[args.index("--node-rank") + 1] == "$(LWS_WORKER_INDEX)"
        assert args[args.index("--dist-init-addr") + 1] == "$(LWS_LEADER_ADDRESS):20000"
        # Everything else is the recipe's argv, token for token.
        single = render_server_argv(
            locked.recipe, catalog_for_recipe(locked.recipe, lock=locked.lock)
        )
        i = args.index("--node-rank")
        assert args[:i] + args[i + 4 :] == [
            "$(LWS_GROUP_SIZE)" if a == "2" and prev == "--nnodes" else a
            for prev, a in zip(["", *single], single, strict=False)
        ]
        assert c["resources"] == {"limits": {"nvidia.com/gpu": 8}}
        mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
        assert set(mounts) == {"/dev/shm", "/root/.cache/huggingface"}
        [token] = [e for e in c["env"] if e["name"] == "HF_TOKEN"]
        assert "value" not in token
        assert token["valueFrom"]["secretKeyRef"] == {
            "name": "hf-token",
            "key": "token",
            "optional": True,
        }
    volumes = {v["name"]: v for v in tpl["leaderTemplate"]["spec"]["volumes"]}
    assert volumes["dshm"]["emptyDir"] == {"medium": "Memory"}
    assert volumes["hf-cache"]["hostPath"]["path"] == "/var/cache/huggingface"
    # Only the leader serves HTTP and is probed.
    assert leader["readinessProbe"]["httpGet"] == {"path": "/health_generate", "port": 30000}
    assert "readinessProbe" not in worker and "ports" not in worker
    # The Service reaches the leader pod (LWS labels worker index 0) on the server port.
    assert service["metadata"] == {**service["metadata"], "name": "kimi26-tp16-2n-leader"}
    assert service["metadata"]["namespace"] == lws["metadata"]["namespace"] == "llm"
    assert service["spec"]["selector"] == {
        "leaderworkerset.sigs.k8s.io/name": "kimi26-tp16-2n",
        "leaderworkerset.sigs.k8s.io/worker-index": "0",
    }
    assert service["spec"]["ports"][0]["targetPort"] == 30000


def test_single_node_is_a_deployment(project: Project, k8s_schemas: K8sSchemas) -> None:
    locked = load_locked(str(project.lock("kimi26-tp8")))
    deployment, service = k8s_manifests(locked)
    assert errors_of(k8s_schemas.validator("Deployment"), deployment) == []
    assert errors_of(k8s_schemas.validator("Service"), service) == []
    pod = deployment["spec"]["template"]
    [container] = pod["spec"]["containers"]
    assert container["args"] == render_server_argv(
        locked.recipe, catalog_for_recipe(locked.recipe, lock=locked.lock)
    )
    assert not any("LWS_" in a or a == "--node-rank" for a in container["args"])
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 8
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    labels = pod["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert deployment["spec"]["selector"]["matchLabels"] == labels


def test_simulated_recipe_requests_no_gpu(project: Project, k8s_schemas: K8sSchemas) -> None:
    deployment, _ = k8s_manifests(load_locked(str(project.lock("demo"))))
    assert errors_of(k8s_schemas.validator("Deployment"), deployment) == []
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert "resources" not in container
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["REPRO_SIM_PROFILE"] == "demo"


def test_hub_cache_pvc_and_secret_name(project: Project, lws_validator: Any) -> None:
    locked = load_locked(str(project.lock("kimi26-tp16-2n")))
    opts = K8sOptions(
        hub_cache_pvc="hf-cache", hf_token_secret="hub", hf_token_key="hf", shm_size="64Gi"
    )
    lws, _ = k8s_manifests(locked, opts)
    assert errors_of(lws_validator, lws) == []
    spec = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["hf-cache"]["persistentVolumeClaim"] == {"claimName": "hf-cache"}
    assert volumes["dshm"]["emptyDir"]["sizeLimit"] == "64Gi"
    [token] = [e for e in spec["containers"][0]["env"] if e["name"] == "HF_TOKEN"]
    assert token["valueFrom"]["secretKeyRef"]["name"] == "hub"
    with pytest.raises(ExportError, match="not both"):
        k8s_manifests(locked, K8sOptions(hub_cache_pvc="a", hub_cache_host_path="/b"))


def test_yaml_text_is_plain_and_holds_no_token(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_" + "x" * 34)
    locked = load_locked(str(project.lock("kimi26-tp16-2n")))
    text = render_k8s(locked)
    assert "hf_xxxx" not in text
    assert "&id" not in text and "*id" not in text  # no YAML anchors for kubectl readers
    assert list(yaml.safe_load_all(text)) == k8s_manifests(locked)


# --- the digest: from the lock, or given explicitly, never a tag ------------------------------
def test_refuses_a_lock_without_pushed_digest(project: Project) -> None:
    locked = load_locked(str(project.lock("kimi26-tp16-2n", digest=None)))
    with pytest.raises(ExportError) as caught:
        k8s_manifests(locked)
    assert "no pushed image digest" in caught.value.message
    assert "repro image push" in (caught.value.hint or "")


def test_refuses_a_recipe_file_without_image(project: Project) -> None:
    with pytest.raises(ExportError, match="names no image digest") as caught:
        k8s_manifests(load_locked("kimi26-tp16-2n"))
    assert "--image" in (caught.value.hint or "")


@pytest.mark.parametrize(
    "image",
    [
        f"{PUSHED_REPOSITORY}:0.5.23",  # a tag moves
        f"{PUSHED_REPOSITORY}@sha256:abc",  # not a digest
        f"{PUSHED_REPOSITORY}@sha512:{'0' * 128}",
        f"Team/Image@{DIGEST}",  # uppercase repository
    ],
)
def test_explicit_image_must_be_digest_pinned(project: Project, image: str) -> None:
    with pytest.raises(ExportError):
        k8s_manifests(load_locked("kimi26-tp16-2n"), K8sOptions(image=image))


def test_explicit_image_tag_at_digest_keeps_the_digest(project: Project) -> None:
    opts = K8sOptions(image=f"ghcr.io/org/sglang:v1@{DIGEST}")
    lws, _ = k8s_manifests(load_locked("kimi26-tp16-2n"), opts)
    assert _containers(lws)[0]["image"] == f"ghcr.io/org/sglang@{DIGEST}"


def test_name_must_suit_kubernetes(project: Project) -> None:
    lock = project.lock("kimi26-tp16-2n")
    with pytest.raises(ExportError, match="Kubernetes name"):
        k8s_manifests(load_locked(str(lock)), K8sOptions(name="Kimi_Big"))
    lws, _ = k8s_manifests(load_locked(str(lock)), K8sOptions(name="kimi"))
    assert lws["metadata"]["name"] == "kimi"


def test_multinode_recipe_must_fill_its_nodes(project: Project) -> None:
    """The tp x pp check of `repro recipe check` refuses the export too."""
    project.recipe("half", "extends: kimi26-tp8\ntopology: {gpus: 8, nodes: 2}\n")
    with pytest.raises(ExportError, match="4 GPUs per node"):
        k8s_manifests(load_locked("half"), K8sOptions(image=f"reg.io/x@{DIGEST}"))


# --- CLI ----------------------------------------------------------------------------------------
def test_cli_writes_file_atomically_or_stdout(project: Project) -> None:
    lock = project.lock("kimi26-tp16-2n")
    runner = CliRunner()
    out = project.root / "deploy" / "kimi.yaml"
    out.parent.mkdir()
    out.write_text("old content\n")
    result = runner.invoke(main, ["export", "k8s", str(lock), "-n", "llm", "-o", str(out)])
    assert result.exit_code == 0, result.output
    docs = list(yaml.safe_load_all(out.read_text()))
    assert [d["kind"] for d in docs] == ["LeaderWorkerSet", "Service"]
    assert sorted(p.name for p in out.parent.iterdir()) == ["kimi.yaml"]  # no temp file left
    stdout = runner.invoke(main, ["export", "k8s", str(lock), "-n", "llm"])
    assert stdout.exit_code == 0
    assert stdout.output == out.read_text()


def test_cli_error_is_one_clean_message(project: Project) -> None:
    lock = project.lock("kimi26-tp16-2n", digest=None)
    result = CliRunner().invoke(main, ["export", "k8s", str(lock)])
    assert result.exit_code == ExitCode.EXPORT
    assert "error:" in result.output and "no pushed image digest" in result.output
    assert "repro image push" in result.output
    assert "Traceback" not in result.output


def test_cli_warns_that_an_unlocked_recipe_names_unpinned_revisions(project: Project) -> None:
    """Exported from a recipe name, the manifest carries `--revision main`: the user is told
    on stderr, and the manifest on stdout stays clean."""
    args = ["export", "k8s", "kimi26-tp16-2n", "--image", PINNED]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "kimi26-tp16-2n is not locked" in result.stderr
    assert "run `repro lock kimi26-tp16-2n` first" in result.stderr
    assert "not locked" not in result.stdout
    assert "kind: LeaderWorkerSet" in result.stdout
    locked = CliRunner().invoke(main, ["export", "k8s", str(project.lock("kimi26-tp16-2n"))])
    assert locked.exit_code == 0 and "not locked" not in locked.stderr
