"""`repro image patch add`: put a copy of a remote patch into the patch cache."""

from __future__ import annotations

from pathlib import Path

import click

from repro.lock import patchcache
from repro.recipe.images import load_image_spec


@click.group("patch")
def patch() -> None:
    """The patch cache: each remote diff of an image's patch set, kept by sha256.

    `repro lock` fetches a remote diff from its URL once; where that URL is out of reach,
    put a copy in place by hand. Where the cache lives: REPRO_PATCH_CACHE, else
    $XDG_CACHE_HOME/repro/patches, else ~/.cache/repro/patches.
    """


@patch.command("add")
@click.argument("spec")
@click.argument("name")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def add(spec: str, name: str, file: Path) -> None:
    """Put FILE into the patch cache as image spec SPEC's remote patch NAME.

    Refused unless its sha256 is the one SPEC pins (an unpinned patch is pinned by the
    next `repro lock`). Prints where it went and its sha256.

    \b
      repro image patch add sglang-0.5.15-cu13-ddtree sglang-pr-29907-ddtree \\
        build/ddtree-pr/ddtree-0.5.15.diff
    """
    path, digest = patchcache.add_for_spec(load_image_spec(spec), name, file)
    click.echo(f"{path}\nsha256 {digest}")
