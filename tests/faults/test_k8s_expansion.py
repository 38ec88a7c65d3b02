"""Kubernetes expands `$(VAR)` in a container's command, args and env values: a recipe string
such as `--served-model-name $(HF_TOKEN)` would make the pod serve, log and record the Secret
in its environment. Every string repro writes there reaches the pod as written (`$$`), and
only the exporter's own LWS placeholders are expanded."""

from __future__ import annotations

from typing import Any

import pytest

from repro.export import k8s_manifests
from repro.lock import load_locked
from tests.export.conftest import TWO_NODES, Project

HOSTILE = (
    'server: {extra_args: [--served-model-name, "$(HF_TOKEN)"]}\nenv: {SGLANG_X: "a$(HF_TOKEN)b"}\n'
)


def _containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spec = doc["spec"]
    pods = (
        [spec["template"]["spec"]]
        if "template" in spec
        else [t["spec"] for k, t in spec["leaderWorkerTemplate"].items() if k.endswith("late")]
    )
    return [c for pod in pods for c in [*pod.get("initContainers", []), *pod["containers"]]]


def _expanded(text: str) -> str:
    """What Kubernetes makes of `text`: `$$` is `$`, `$(VAR)` becomes the variable's value."""
    return text.replace("$$", "\0").replace("$(HF_TOKEN)", "SECRET").replace("\0", "$")


@pytest.mark.parametrize("extends", ["extends: kimi26-tp8\n", TWO_NODES])
def test_no_recipe_string_is_expanded(project: Project, extends: str) -> None:
    project.recipe("hostile", extends + HOSTILE)
    docs = k8s_manifests(load_locked(str(project.lock("hostile"))))
    containers = _containers(docs[0])
    assert containers
    for container in containers:
        strings = [*container["command"], *container["args"]]
        strings += [e["value"] for e in container.get("env", []) if "value" in e]
        assert not any("SECRET" in _expanded(s) for s in strings), container["name"]
    server = containers[-1]
    args = server["args"]
    assert _expanded(args[args.index("--served-model-name") + 1]) == "$(HF_TOKEN)"
    [env] = [e["value"] for e in server["env"] if e["name"] == "SGLANG_X"]
    assert _expanded(env) == "a$(HF_TOKEN)b"
    if "--node-rank" in args:  # the exporter's own placeholders are still expanded
        assert args[args.index("--node-rank") + 1] == "$(LWS_WORKER_INDEX)"
