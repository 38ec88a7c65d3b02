"""Kubernetes manifests: a LeaderWorkerSet (+ leader Service) per recipe, by image digest.

One group of `topology.nodes` pods runs the recipe: LWS (leaderworkerset.x-k8s.io/v1) creates
the leader (worker index 0) and the workers and injects LWS_LEADER_ADDRESS, LWS_GROUP_SIZE and
LWS_WORKER_INDEX into every container; Kubernetes expands `$(VAR)` in `args`, so the rendered
command reads its node rank and the rendezvous address from them (as LWS's own SGLang example,
docs/examples/sglang/lws.yaml). Kubernetes expands `$(VAR)` in every container's command,
args and env values, so every string of the recipe written there goes through `literal`
(`$` as `$$`): `--served-model-name $(HF_TOKEN)` stays those characters, and the pod never
serves, logs or records the Secret. A single-node recipe becomes a plain Deployment. HF_TOKEN
comes from a Secret (`secretKeyRef`), never inline. A locked recipe's server runs with the Hub
offline, so every pod first runs the init container `prefill-weights`, which downloads the
pinned files into the node's Hub cache. Every option that becomes a field (namespace, claim,
Secret and key, shared-memory size) is refused unless it is what that field accepts
(`repro.export.k8svalues`), naming the option.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from repro import __version__
from repro.export.common import (
    DEFAULT_DIST_PORT,
    HF_TOKEN,
    HUB_CACHE_IN_CONTAINER,
    Prepared,
    prepare,
)
from repro.export.image import ExportError
from repro.export.k8svalues import DNS_1123_LABEL, DNS_1123_SUBDOMAIN, QUANTITY, SECRET_KEY
from repro.recipe import LAUNCH
from repro.schema.lock import HUB_OFFLINE_ENV, Locked
from repro.schema.recipe import Recipe

LWS_API = "leaderworkerset.x-k8s.io/v1"
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"  # set by LWS on every pod of the set
LWS_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"  # "0" is the leader
HEALTH_PATH = "/health_generate"  # SGLang: runs one generation step (http_server.py)
CONTAINER = "sglang"
PREFILL_CONTAINER = "prefill-weights"
SHM_VOLUME, HUB_VOLUME = "dshm", "hf-cache"
DEFAULT_HOST_PATH = "/var/cache/huggingface"
MAX_NAME = 45  # LWS names pods <name>-<group>-<index> and the headless Service <name>
DNS_LABEL = re.compile(r"^[a-z]([a-z0-9-]*[a-z0-9])?$")  # DNS-1035 label (Services need it)


@dataclass(frozen=True)
class K8sOptions:
    namespace: str | None = None
    name: str | None = None  # default: the recipe name, '.' and '_' as '-'
    image: str | None = None  # REPOSITORY@sha256:..., overrides the lock
    hub_cache_pvc: str | None = None  # a PersistentVolumeClaim holding the Hub cache...
    hub_cache_host_path: str | None = None  # ...or a directory on every node (the default)
    hf_token_secret: str = "hf-token"
    hf_token_key: str = "token"
    dist_port: int = DEFAULT_DIST_PORT
    shm_size: str | None = None  # sizeLimit of the /dev/shm emptyDir, e.g. 64Gi

    def check(self) -> None:
        """Refuse a value its field does not accept, naming the option that gave it."""
        for option, value, kind in (
            ("--namespace", self.namespace, DNS_1123_LABEL),
            ("--hub-cache-pvc", self.hub_cache_pvc, DNS_1123_SUBDOMAIN),
            ("--hf-token-secret", self.hf_token_secret, DNS_1123_SUBDOMAIN),
            ("--hf-token-secret", self.hf_token_key, SECRET_KEY),  # its :KEY
            ("--shm-size", self.shm_size, QUANTITY),
        ):
            problem = None if value is None else kind.problem(value)
            if problem is not None:
                raise K8sValueError(option, problem)


class K8sValueError(ExportError):
    """An option's value that its manifest field does not accept."""

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(f"{option} {problem}")
        self.option, self.problem = option, problem


def literal(text: str) -> str:
    """`text` as a container's command, args or env value that Kubernetes leaves as written:
    it expands `$(VAR)` there and reads `$$` as one `$`."""
    return text.replace("$", "$$")


def resource_name(recipe: Recipe, override: str | None) -> str:
    name = override or recipe.name.replace(".", "-").replace("_", "-")
    if not DNS_LABEL.match(name) or len(name) > MAX_NAME:
        raise ExportError(
            f"{name!r} is not usable as a Kubernetes name (lowercase letters, digits and '-', "
            f"starting with a letter, at most {MAX_NAME} characters)",
            hint="pass --name",
        )
    return name


def server_volumes(opts: K8sOptions) -> list[dict[str, Any]]:
    shm: dict[str, Any] = {"medium": "Memory"}
    if opts.shm_size:
        shm["sizeLimit"] = opts.shm_size
    hub: dict[str, Any]
    if opts.hub_cache_pvc and opts.hub_cache_host_path:
        raise ExportError("give either --hub-cache-pvc or --hub-cache-host-path, not both")
    if opts.hub_cache_pvc:
        hub = {"persistentVolumeClaim": {"claimName": opts.hub_cache_pvc}}
    else:
        path = opts.hub_cache_host_path or DEFAULT_HOST_PATH
        if not path.startswith("/"):
            raise ExportError(f"--hub-cache-host-path {path!r} must be an absolute path")
        hub = {"hostPath": {"path": path, "type": "DirectoryOrCreate"}}
    return [{"name": SHM_VOLUME, "emptyDir": shm}, {"name": HUB_VOLUME, **hub}]


def server_container(
    p: Prepared, opts: K8sOptions, args: list[str], leader: bool
) -> dict[str, Any]:
    """The server container; `args` are the server's, already `literal`."""
    env: list[dict[str, Any]] = [{"name": k, "value": literal(v)} for k, v in p.env.items()]
    secret = {"name": opts.hf_token_secret, "key": opts.hf_token_key, "optional": True}
    env.append({"name": HF_TOKEN, "valueFrom": {"secretKeyRef": secret}})
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": p.pinned.reference,
        "imagePullPolicy": "IfNotPresent",
        "command": list(LAUNCH),
        "args": list(args),
        "env": env,
        "volumeMounts": [
            {"name": SHM_VOLUME, "mountPath": "/dev/shm"},
            {"name": HUB_VOLUME, "mountPath": HUB_CACHE_IN_CONTAINER},
        ],
    }
    if p.gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": p.gpus}}
    if leader:
        container["ports"] = [{"name": "http", "containerPort": p.port, "protocol": "TCP"}]
        container["readinessProbe"] = {
            "httpGet": {"path": HEALTH_PATH, "port": p.port},
            "initialDelaySeconds": 30,
            "periodSeconds": 10,
            "timeoutSeconds": 30,
            "failureThreshold": 3,
        }
    return container


def prefill_container(p: Prepared, opts: K8sOptions) -> dict[str, Any]:
    """The init container that puts the pinned weights in this node's Hub cache (the server
    runs with the Hub offline)."""
    command, *args = p.prefill_argv()
    secret = {"name": opts.hf_token_secret, "key": opts.hf_token_key, "optional": True}
    return {
        "name": PREFILL_CONTAINER,
        "image": p.pinned.reference,
        "imagePullPolicy": "IfNotPresent",
        "command": [literal(command)],
        "args": [literal(a) for a in args],
        "env": [
            {"name": HUB_OFFLINE_ENV, "value": "0"},
            {"name": HF_TOKEN, "valueFrom": {"secretKeyRef": secret}},
        ],
        "volumeMounts": [{"name": HUB_VOLUME, "mountPath": HUB_CACHE_IN_CONTAINER}],
    }


def _pod(p: Prepared, opts: K8sOptions, args: list[str], leader: bool) -> dict[str, Any]:
    pod: dict[str, Any] = {}
    if p.prefill:
        pod["initContainers"] = [prefill_container(p, opts)]
    pod.update(
        containers=[server_container(p, opts, args, leader)],
        volumes=server_volumes(opts),
        terminationGracePeriodSeconds=30,
    )
    return pod


def object_labels(name: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "repro"}


def _metadata(p: Prepared, opts: K8sOptions, name: str, app: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if opts.namespace:
        meta["namespace"] = opts.namespace
    meta["labels"] = object_labels(app)
    meta["annotations"] = {"repro/recipe": p.recipe.name, "repro/image": p.pinned.reference}
    return meta


def _service(p: Prepared, opts: K8sOptions, name: str, selector: dict[str, str]) -> dict[str, Any]:
    meta = _metadata(p, opts, f"{name}-leader" if p.nodes > 1 else name, name)
    port = {"name": "http", "port": p.port, "targetPort": p.port, "protocol": "TCP"}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {"type": "ClusterIP", "selector": selector, "ports": [port]},
    }


def k8s_manifests(locked: Locked, opts: K8sOptions | None = None) -> list[dict[str, Any]]:
    """The LeaderWorkerSet (or, for one node, Deployment) and the Service serving it."""
    opts = opts or K8sOptions()
    opts.check()
    name = resource_name(locked.recipe, opts.name)
    p = prepare(locked, opts.image, opts.dist_port)
    labels = object_labels(name)
    if p.nodes == 1:
        args = p.argv(node_rank="0", dist_init_addr="", literal=literal)
        deployment = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _metadata(p, opts, name, name),
            "spec": {
                "replicas": 1,
                "strategy": {"type": "Recreate"},  # GPUs: never two servers at once
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": _pod(p, opts, args, leader=True),
                },
            },
        }
        return [deployment, _service(p, opts, name, labels)]
    args = p.argv(
        node_rank="$(LWS_WORKER_INDEX)",
        dist_init_addr=f"$(LWS_LEADER_ADDRESS):{opts.dist_port}",
        nnodes="$(LWS_GROUP_SIZE)",
        literal=literal,
    )
    lws = {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        "metadata": _metadata(p, opts, name, name),
        "spec": {
            "replicas": 1,
            "startupPolicy": "LeaderCreated",
            "leaderWorkerTemplate": {
                "size": p.nodes,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": {
                    "metadata": {"labels": {**labels, "role": "leader"}},
                    "spec": _pod(p, opts, args, leader=True),
                },
                "workerTemplate": {
                    "metadata": {"labels": {**labels, "role": "worker"}},
                    "spec": _pod(p, opts, args, leader=False),
                },
            },
        },
    }
    selector = {LWS_NAME_LABEL: name, LWS_INDEX_LABEL: "0"}
    return [lws, _service(p, opts, name, selector)]


def render_k8s(locked: Locked, opts: K8sOptions | None = None) -> str:
    """The manifests as one multi-document YAML text for `kubectl apply -f`."""
    docs = k8s_manifests(locked, opts)
    image = docs[0]["metadata"]["annotations"]["repro/image"]
    header = (
        f"# {docs[0]['kind']} + Service for recipe {locked.name}, written by repro {__version__}\n"
        f"# image {image}\n"
    )
    return header + manifest_text(docs)


def manifest_text(docs: list[dict[str, Any]]) -> str:
    """Objects as one multi-document YAML text for `kubectl apply -f`."""
    return yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=100)


class _Dumper(yaml.SafeDumper):
    """Plain YAML for kubectl readers: no `&id001` anchors for repeated values."""

    def ignore_aliases(self, data: Any) -> bool:
        return True
