"""`run_pod`: a Job's pod run on the Docker engine, the way a kubelet runs it, for the parts
repro's campaign Jobs use (no Kubernetes cluster can run here: no registry to pull one from).

Implemented, as Kubernetes documents them: native sidecars (an init container with
restartPolicy Always) started first and the next container held back until their startup
probe (httpGet) passes; one main container; every container in the first one's network
namespace (so 127.0.0.1 is the pod's); command + args (no `$(VAR)` expansion); env `value`
(and `secretKeyRef` with optional: true, which a missing Secret leaves unset); volumes
emptyDir, configMap (from the manifest's ConfigMaps), persistentVolumeClaim (a host folder
per claim) and hostPath (a scratch folder: never the host's). Anything else raises
NotImplementedError. `mounts` adds host folders to a container and `env` variables (test-only
plumbing: see its users).
"""

from __future__ import annotations

import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONTAINER_KEYS = {"name", "image", "imagePullPolicy", "command", "args", "env", "volumeMounts",
                  "ports", "restartPolicy", "startupProbe", "resources"}  # fmt: skip
POD_KEYS = {"restartPolicy", "initContainers", "containers", "volumes",
            "terminationGracePeriodSeconds"}  # fmt: skip


@dataclass
class PodResult:
    exit_code: int
    logs: dict[str, str]  # container name -> its output


def run_pod(
    job: Mapping[str, Any],
    config_maps: Mapping[str, Mapping[str, str]],
    claims: Mapping[str, Path],
    scratch: Path,
    deadline_s: float,
    mounts: Mapping[str, list[tuple[Path, str]]] | None = None,
    env: Mapping[str, Mapping[str, str]] | None = None,
) -> PodResult:
    """Run `job`'s pod to the end of its main container; every container is removed."""
    pod = job["spec"]["template"]["spec"]
    _known(pod, POD_KEYS, "pod spec")
    if pod.get("restartPolicy") != "Never":
        raise NotImplementedError("only restartPolicy: Never pods")
    volumes = _volumes(pod.get("volumes", []), config_maps, claims, scratch)
    prefix = f"pod-{uuid.uuid4().hex[:8]}"
    started: list[str] = []
    logs: dict[str, str] = {}
    end = time.monotonic() + deadline_s
    try:
        for spec in pod.get("initContainers", []):
            if spec.get("restartPolicy") != "Always":
                raise NotImplementedError("init containers that run to completion")
            name = _start(spec, prefix, volumes, started, _Extra.of(spec, mounts, env))
            _wait_started(spec, name, end)
        [main] = pod["containers"]
        name = _start(main, prefix, volumes, started, _Extra.of(main, mounts, env))
        left = max(1.0, end - time.monotonic())
        waited = subprocess.run(["docker", "wait", name], capture_output=True, text=True,
                                timeout=left)  # fmt: skip
        code = int(waited.stdout.strip() or -1)
        for container in started:
            shown = subprocess.run(["docker", "logs", container], capture_output=True, text=True)
            logs[container.removeprefix(f"{prefix}-")] = shown.stdout + shown.stderr
        return PodResult(code, logs)
    finally:
        for container in reversed(started):
            subprocess.run(["docker", "rm", "-f", container], capture_output=True)


@dataclass
class _Extra:
    mounts: list[tuple[Path, str]]
    env: Mapping[str, str]

    @classmethod
    def of(
        cls,
        spec: Mapping[str, Any],
        mounts: Mapping[str, list[tuple[Path, str]]] | None,
        env: Mapping[str, Mapping[str, str]] | None,
    ) -> _Extra:
        return cls((mounts or {}).get(spec["name"], []), (env or {}).get(spec["name"], {}))


def _known(spec: Mapping[str, Any], keys: set[str], what: str) -> None:
    unknown = set(spec) - keys
    if unknown:
        raise NotImplementedError(f"{what}: {sorted(unknown)}")


def _volumes(
    specs: list[dict[str, Any]],
    config_maps: Mapping[str, Mapping[str, str]],
    claims: Mapping[str, Path],
    scratch: Path,
) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for spec in specs:
        name = spec["name"]
        where = scratch / "volumes" / name
        if "configMap" in spec:
            where.mkdir(parents=True)
            for key, text in config_maps[spec["configMap"]["name"]].items():
                (where / key).write_text(text)
        elif "persistentVolumeClaim" in spec:
            where = claims[spec["persistentVolumeClaim"]["claimName"]]
        elif "emptyDir" in spec or "hostPath" in spec:
            where.mkdir(parents=True)
        else:
            raise NotImplementedError(f"volume {name}: {sorted(spec)}")
        out[name] = where
    return out


def _start(
    spec: Mapping[str, Any],
    prefix: str,
    volumes: Mapping[str, Path],
    started: list[str],
    extra: _Extra,
) -> str:
    _known(spec, CONTAINER_KEYS, f"container {spec['name']}")
    if spec.get("resources"):
        raise NotImplementedError("resources (GPUs): this engine has none")
    argv = [*spec.get("command", []), *spec.get("args", [])]
    if any("$(" in word for word in argv):
        raise NotImplementedError("$(VAR) expansion")
    name = f"{prefix}-{spec['name']}"
    run = ["docker", "run", "-d", "--name", name, "--pull", "never"]
    run += ["--network", f"container:{started[0]}"] if started else []
    for item in spec.get("env", []):
        if "value" in item:
            run += ["-e", f"{item['name']}={item['value']}"]
        elif not item.get("valueFrom", {}).get("secretKeyRef", {}).get("optional"):
            raise NotImplementedError(f"env {item['name']}: {sorted(item)}")
    for mount in spec.get("volumeMounts", []):
        mode = ":ro" if mount.get("readOnly") else ""
        run += ["-v", f"{volumes[mount['name']]}:{mount['mountPath']}{mode}"]
    for host, inside in extra.mounts:
        run += ["-v", f"{host}:{inside}:ro"]
    for key, value in extra.env.items():
        run += ["-e", f"{key}={value}"]
    if spec.get("command"):
        run += ["--entrypoint", spec["command"][0]]
        argv = argv[1:]
    subprocess.run([*run, spec["image"], *argv], check=True, capture_output=True, text=True)
    started.append(name)
    return name


def _wait_started(spec: Mapping[str, Any], name: str, end: float) -> None:
    """Poll the startup probe at the container's address until it answers 2xx."""
    probe = spec.get("startupProbe", {}).get("httpGet")
    if probe is None:
        return
    shown = subprocess.run(
        ["docker", "inspect", "-f", "{{.NetworkSettings.IPAddress}}", name],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    url = f"http://{shown.stdout.strip()}:{probe['port']}{probe['path']}"
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(url, timeout=5) as reply:
                if 200 <= reply.status < 300:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(1)
    raise TimeoutError(f"{spec['name']}: {url} did not answer before the deadline")
