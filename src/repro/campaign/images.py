"""A campaign folder's own image specs: `images/<spec>.yaml`, and the local patches they name
under `patches/<set>/`, copied from where each point's recipe found them.

A point recipe names its image spec (`image: sglang-0.5.23-cu13`), which repro looks up in
`images/` beside the recipe's folder (`repro.recipe.images.default_images_dir`). With the
specs copied into the campaign folder, a point resolves its image inside the folder: from
any directory, on any node that sees the folder, as `repro campaign run` did here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from repro.recipe.images import ImageSpecError, load_image_spec
from repro.run.simulate import SIM_IMAGE

IMAGES, PATCHES = "images", "patches"


def copy_image_specs(image: str, images_dir: Path, folder: Path) -> None:
    """Spec `image` (a name looked up in `images_dir`) and the simulator's (what `--sim` runs
    a point on) copied into `folder`. A spec named by a path stays where it is; one that is
    not there is left to the point's check, which names it."""
    for name in dict.fromkeys((image, SIM_IMAGE)):
        if "/" not in name and not name.endswith((".yaml", ".yml")):
            _copy_spec(name, images_dir, folder)


def _copy_spec(name: str, images_dir: Path, folder: Path) -> None:
    try:
        spec = load_image_spec(name, images_dir)
    except ImageSpecError:
        return
    source = spec.source_path
    assert source is not None  # loaded from a file
    target = folder / IMAGES / source.name
    if target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    patches = source.parent.parent / PATCHES
    for path in spec.local_patch_paths(patches):
        copied = folder / PATCHES / path.relative_to(patches)
        copied.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copied)
