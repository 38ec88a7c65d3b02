"""A campaign fanned out on Kubernetes: one Job per measured point.

`repro campaign export k8s FILE` makes the campaign folder (plan, point recipes, index, as
`run` and the Slurm export do), locks every measured point into `locks/<point>.lock.json`
and writes `campaign-k8s.yaml`: per point a ConfigMap holding its lock (without the option
catalog: a few KB, far below the 256 KiB `kubectl apply` annotates) and a Job whose pod
runs

- the point's SGLang server (the lock's exact argv on the digest-pinned image, as
  `repro export k8s` writes it) as a native sidecar: an init container with restartPolicy
  Always (Kubernetes 1.29 and later), which the kubelet starts first, holds the main
  container back until its startup probe (/health_generate) passes, and stops once the main
  container has exited;
- `bench`: `repro run <lock> --url http://127.0.0.1:<port> --runs-dir /results/points/<point>`
  (`repro run --url`: lock, accept, bench and report against that server), so the point's
  run folder lands on the results claim where `repro campaign run` would put it.

The scheduler places the Jobs as their GPUs allow. Copy the claim's `points/` into the
campaign folder (`kubectl cp`), then `repro campaign collect DIR` and `repro campaign report
DIR`. A point spanning several nodes is refused: its group needs a LeaderWorkerSet (`repro
export k8s` on its lock) and a bench run against the leader's Service (`repro run --url`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repro import __version__
from repro.campaign.execute import start_campaign
from repro.campaign.folder import CAMPAIGNS_DIR, CampaignFolder
from repro.campaign.pinning import lock_point
from repro.errors import ReproError
from repro.export.common import DEFAULT_DIST_PORT, prepare
from repro.export.image import ExportError, parse_pinned
from repro.export.k8s import (
    DNS_LABEL,
    HEALTH_PATH,
    K8sOptions,
    literal,
    manifest_text,
    object_labels,
    prefill_container,
    server_container,
    server_volumes,
)
from repro.export.k8svalues import DNS_1123_SUBDOMAIN
from repro.lock import load_locked
from repro.schema.campaign import PlannedPoint
from repro.schema.lock import Locked

MANIFEST_FILE = "campaign-k8s.yaml"
BENCH_CONTAINER = "bench"
LOCKS_MOUNT, RESULTS_MOUNT = "/campaign/locks", "/results"
LOCKS_VOLUME, RESULTS_VOLUME = "point-lock", "results"
MAX_APPLIED_BYTES = 262144  # `kubectl apply`'s last-applied-configuration annotation
STARTUP_PROBE_PERIOD_S = 10
STARTUP_LIMIT_S = 2 * 3600  # a 1T-parameter checkpoint loads for tens of minutes
MAX_NAME = 63  # a Job's name is also its pods' job-name label value
_DNS_LABEL = "lowercase letters, digits and '-', starting with a letter"


@dataclass(frozen=True)
class CampaignK8sOptions:
    bench_image: str  # REPOSITORY@sha256:... of an image with repro on its PATH
    results_pvc: str  # a ReadWriteMany claim every point's run folder lands on
    server: K8sOptions  # the server pods' (image: every point's, else each lock's pushed one)
    campaigns_dir: Path = CAMPAIGNS_DIR
    repro: str = "repro"  # the command in the bench image

    def check(self) -> None:
        """Every value that becomes an object reference, refused before anything is made."""
        server = self.server
        if server.image is not None:
            parse_pinned(server.image)
        server.check()
        problem = DNS_1123_SUBDOMAIN.problem(self.results_pvc)
        if problem is not None:
            raise ReproError(f"--results-pvc {problem}")


def export_k8s(source: Path, opts: CampaignK8sOptions, console: Any) -> CampaignFolder:
    """The campaign folder of `source` with its locks and `campaign-k8s.yaml` (see the module
    docstring); nothing is written when a point cannot be exported."""
    opts.check()  # the names; the bench image's digest just below
    bench_image = parse_pinned(opts.bench_image, "--bench-image").reference
    folder, plan, _index = start_campaign(source, opts.campaigns_dir, console)
    try:
        docs: list[dict[str, Any]] = []
        for point in (p for p in plan.points if p.same_server_as is None):
            docs += point_manifests(folder, plan.campaign.name, point, opts, bench_image)
            console.print(f"  {point.name}: locked, Job {job_name(plan.campaign.name, point)}")
    except ReproError:
        folder.remove()  # a refused export leaves no half-made campaign behind
        raise
    header = (
        f"# Campaign {plan.campaign.name}: one Job per point, written by repro {__version__}.\n"
        f"# kubectl apply -f {MANIFEST_FILE}; then copy points/ from claim "
        f"{opts.results_pvc} into this folder and run `repro campaign collect`.\n"
    )
    (folder.path / MANIFEST_FILE).write_text(header + manifest_text(docs))
    return folder


def _shipped_lock(locked: Locked) -> str:
    """The lock the bench container runs: the campaign folder's, without its option catalog
    (about 140 KB: the server's argv is already rendered into the server container, and
    `repro run LOCK --url` starts no server), so that its ConfigMap stays far below what
    `kubectl apply` can annotate."""
    assert locked.lock is not None
    return locked.lock.model_copy(update={"catalog": None}).to_json()


def job_name(campaign: str, point: PlannedPoint) -> str:
    return f"{campaign}-{point.name}".replace(".", "-").replace("_", "-").lower()


def point_manifests(
    folder: CampaignFolder,
    campaign: str,
    point: PlannedPoint,
    opts: CampaignK8sOptions,
    bench_image: str,
) -> list[dict[str, Any]]:
    """The point's ConfigMap (its lock) and Job (server sidecar + bench container)."""
    name = job_name(campaign, point)
    if len(name) > MAX_NAME or not DNS_LABEL.match(name):
        raise ReproError(
            f"point {point.name}: {name!r} is not usable as a Job name ({_DNS_LABEL}, at "
            f"most {MAX_NAME} characters)",
            hint="shorten the campaign's or the point's name",
        )
    lock_file = lock_point(folder, point)
    locked = load_locked(str(lock_file))
    try:
        prepared = prepare(locked, opts.server.image, DEFAULT_DIST_PORT)
    except ExportError as err:
        raise ReproError(f"point {point.name}: {err.message}", hint=err.hint) from None
    if prepared.nodes > 1:
        raise ReproError(
            f"point {point.name} spans {prepared.nodes} nodes: one pod cannot hold it",
            hint=f"export its lock with `repro export k8s {lock_file}` (a LeaderWorkerSet) "
            "and measure it with `repro run LOCK --url http://<its service>`",
        )
    text = _shipped_lock(locked)
    server_opts = opts.server
    server = server_container(
        prepared, server_opts, prepared.argv("0", "", literal=literal), leader=True
    )
    server.pop("readinessProbe")
    server["restartPolicy"] = "Always"  # a native sidecar: stopped when bench has exited
    server["startupProbe"] = {
        "httpGet": {"path": HEALTH_PATH, "port": prepared.port},
        "periodSeconds": STARTUP_PROBE_PERIOD_S,
        "timeoutSeconds": 30,
        "failureThreshold": STARTUP_LIMIT_S // STARTUP_PROBE_PERIOD_S,
    }
    init = [prefill_container(prepared, server_opts)] if prepared.prefill else []
    url, runs = f"http://127.0.0.1:{prepared.port}", f"{RESULTS_MOUNT}/points/{point.name}"
    bench = {
        "name": BENCH_CONTAINER,
        "image": bench_image,
        "imagePullPolicy": "IfNotPresent",
        "command": [literal(opts.repro)],
        "args": [
            literal(a)
            for a in ["run", f"{LOCKS_MOUNT}/{lock_file.name}", "--url", url, "--runs-dir", runs]
        ],
        "volumeMounts": [
            {"name": LOCKS_VOLUME, "mountPath": LOCKS_MOUNT, "readOnly": True},
            {"name": RESULTS_VOLUME, "mountPath": RESULTS_MOUNT},
        ],
    }
    volumes = [
        *server_volumes(server_opts),
        {"name": LOCKS_VOLUME, "configMap": {"name": name}},
        {"name": RESULTS_VOLUME, "persistentVolumeClaim": {"claimName": opts.results_pvc}},
    ]
    labels = {**object_labels(name), "app.kubernetes.io/part-of": campaign}
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if server_opts.namespace:
        meta["namespace"] = server_opts.namespace
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta,
        "data": {lock_file.name: text},
    }
    if len(json.dumps(config_map).encode()) > MAX_APPLIED_BYTES:
        raise ReproError(
            f"point {point.name}: its lock is over the {MAX_APPLIED_BYTES} bytes "
            "`kubectl apply` can keep of a ConfigMap",
            hint="apply the manifest with `kubectl apply --server-side`",
        )
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {**meta, "annotations": {"repro/point": point.name}},
        "spec": {
            "backoffLimit": 0,  # a failed point is recorded, not retried: resume decides
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "initContainers": [*init, server],
                    "containers": [bench],
                    "volumes": volumes,
                    "terminationGracePeriodSeconds": 30,
                },
            },
        },
    }
    return [config_map, job]
