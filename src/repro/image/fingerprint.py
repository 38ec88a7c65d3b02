"""Image identity that survives `docker save`/`load`, registry round trips and enroot.

RepoDigests vanish across save/load and the image ID depends on the engine's store, so repro
identifies an image by its content: the uncompressed layer diff IDs plus the parts of the
config that change what runs (entrypoint, command, environment, working dir, user, labels).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from typing import Any

from python_on_whales import Image

from repro.image.engine import checked_reference, client


def content_document(image: Image | str, ignore_labels: Collection[str] = ()) -> dict[str, Any]:
    """What the fingerprint covers: layer diff IDs and the runtime-relevant config (less
    `ignore_labels`, for comparing two builds that differ only in when they ran)."""
    if isinstance(image, str):
        image = client().image.inspect(checked_reference(image))
    config = image.config
    labels = {k: v for k, v in (config.labels or {}).items() if k not in ignore_labels}
    return {
        "diff_ids": list(image.root_fs.layers or []),
        "config": {
            "Entrypoint": config.entrypoint,
            "Cmd": config.cmd,
            "Env": config.env,
            "WorkingDir": str(config.working_dir or ""),
            "User": config.user,
            "Labels": labels if ignore_labels else config.labels,
            "ExposedPorts": sorted(config.exposed_ports or {}),
        },
    }


def content_fingerprint(image: Image | str) -> str:
    """`sha256:<hex>` over the layer diff IDs and the runtime-relevant config."""
    canonical = json.dumps(content_document(image), sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def content_differences(found: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    """What differs between two content documents, in words (empty when nothing does)."""
    layers, wanted = found["diff_ids"], expected["diff_ids"]
    differences = []
    if layers != wanted:
        changed = sum(1 for i, layer in enumerate(layers) if wanted[i : i + 1] != [layer])
        differences.append(
            f"{changed} of its {len(layers)} layers"
            if changed
            else f"its layers ({len(layers)} of the {len(wanted)} of a build)"
        )
    differences += [
        key for key in expected["config"] if found["config"][key] != expected["config"][key]
    ]
    return differences
