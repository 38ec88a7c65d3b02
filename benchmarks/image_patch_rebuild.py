"""After a one-line change to one patch: rebuild wall time and bytes pushed, vs image size.

Builds the simulator image (Dockerfile.sglang on the ~250 MB registry-free base) with a patch,
pushes it to a real registry on 127.0.0.1, changes one line of the patch, rebuilds and pushes
again. Bytes pushed are measured twice: from the registry manifests (layers the second push
added) and from the growth of the registry's storage directory.

    .venv/bin/python benchmarks/image_patch_rebuild.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from repro.image.build import PatchFile, build_image  # noqa: E402
from repro.image.buildplan import plan_for_spec  # noqa: E402
from repro.image.registry import push  # noqa: E402
from repro.recipe.images import load_image_spec  # noqa: E402
from tests.support.patches import spec_info_patch  # noqa: E402
from tests.support.registry import docker_login, running_registry  # noqa: E402


def _layers(reference: str) -> dict[str, int]:
    out = subprocess.run(
        ["docker", "manifest", "inspect", "--insecure", reference],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {layer["digest"]: layer["size"] for layer in json.loads(out)["layers"]}


def _du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.environ["DOCKER_CONFIG"] = str(work / "docker-config")
        spec = load_image_spec(REPO / "images" / "sim.yaml")
        base_plan = plan_for_spec(spec).model_copy(update={"name": "sim-bench"})
        with running_registry(work / "registry") as registry:
            docker_login(registry).check_returncode()
            namespace = f"{registry.host}/bench"
            first_patch = PatchFile(
                name="00-ddtree.diff", content=spec_info_patch(REPO, work / "p1", "DDTREE")
            )
            first = build_image(base_plan.model_copy(update={"patches": [first_patch]}))
            pushed_first = push(first.tag, namespace)
            before = _du(work / "registry" / "data")
            image_bytes = sum(_layers(pushed_first.reference).values())

            second_patch = PatchFile(
                name="00-ddtree.diff", content=spec_info_patch(REPO, work / "p2", "DDTREE_V2")
            )
            started = time.monotonic()
            second = build_image(base_plan.model_copy(update={"patches": [second_patch]}))
            rebuild_s = time.monotonic() - started
            started = time.monotonic()
            pushed_second = push(second.tag, namespace)
            push_s = time.monotonic() - started
            grown = _du(work / "registry" / "data") - before
            old, new = _layers(pushed_first.reference), _layers(pushed_second.reference)
            new_layer_bytes = sum(size for digest, size in new.items() if digest not in old)

    print(f"image (compressed layers)    {image_bytes / 1e6:10.1f} MB  ({len(new)} layers)")
    print(f"rebuild after 1-line change  {rebuild_s:10.2f} s")
    print(f"push after 1-line change     {push_s:10.2f} s")
    print(
        f"new layers in the manifest   {new_layer_bytes / 1e3:10.1f} kB  "
        f"({100 * new_layer_bytes / image_bytes:.3f}% of the image)"
    )
    print(
        f"registry storage growth      {grown / 1e3:10.1f} kB  "
        f"({100 * grown / image_bytes:.3f}% of the image, incl. manifest + config)"
    )


if __name__ == "__main__":
    main()
