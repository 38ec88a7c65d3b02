"""Image identity that survives `docker save`/`load`, registry round trips and enroot.

RepoDigests vanish across save/load and the image ID depends on the engine's store, so repro
identifies an image by its content: the uncompressed layer diff IDs plus the parts of the
config that change what runs (entrypoint, command, environment, working dir, user, labels).
"""

from __future__ import annotations

import hashlib
import json

from python_on_whales import Image

from repro.image.engine import checked_reference, client


def content_fingerprint(image: Image | str) -> str:
    """`sha256:<hex>` over the layer diff IDs and the runtime-relevant config."""
    if isinstance(image, str):
        image = client().image.inspect(checked_reference(image))
    config = image.config
    document = {
        "diff_ids": list(image.root_fs.layers or []),
        "config": {
            "Entrypoint": config.entrypoint,
            "Cmd": config.cmd,
            "Env": config.env,
            "WorkingDir": str(config.working_dir or ""),
            "User": config.user,
            "Labels": config.labels,
            "ExposedPorts": sorted(config.exposed_ports or {}),
        },
    }
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
