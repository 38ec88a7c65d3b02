"""`repro export k8s|slurm REF [-o FILE]`: manifests for other clusters, pinned by digest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from repro.cli.options import PORT, k8s_options, k8s_pod_options
from repro.export import (
    SlurmOptions,
    render_k8s,
    render_slurm,
    unpinned_warning,
    write_output,
)
from repro.lock import load_locked
from repro.schema.lock import Locked

_REF_HELP = """
REF is best a lock file (locks/<name>.lock.json) whose image was pushed: the manifest pulls
exactly that digest. Any other REF (a recipe name or file) needs --image REPO@sha256:...
"""

_output = click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="File to write (atomically); default: stdout.",
)
_image = click.option(
    "--image",
    metavar="REPO@sha256:...",
    help="The digest-pinned image to run, instead of the lock's pushed image.",
)
_dist_port = click.option(
    "--dist-port",
    type=PORT,
    default=20000,
    show_default=True,
    help="Port of --dist-init-addr on the first node (multi-node recipes).",
)


def _load(ref: str) -> Locked:
    """`ref` resolved; a recipe without its lock is exported with a warning on stderr."""
    locked = load_locked(ref)
    warning = unpinned_warning(locked)
    if warning:
        click.echo(warning, err=True)
    return locked


@click.group("export")
def export() -> None:
    """Manifests for Kubernetes (LeaderWorkerSet) and Slurm (pyxis/enroot) clusters.

    repro writes them; the cluster runs them. Both run the recipe's exact server command on
    the image digest from the lock, with per-node options for multi-node recipes.
    """


@export.command(
    "k8s", help=f"A LeaderWorkerSet (or, for one node, a Deployment) and a Service.\n{_REF_HELP}"
)
@click.argument("ref")
@click.option("--name", help="Object name (default: the recipe name).")
@_image
@k8s_pod_options
@_dist_port
@_output
def k8s(
    ref: str,
    name: str | None,
    image: str | None,
    dist_port: int,
    output: Path | None,
    **pod: Any,
) -> None:
    options = k8s_options(name=name, image=image, dist_port=dist_port, **pod)
    write_output(render_k8s(_load(ref), options), output)


@export.command("slurm", help=f"An sbatch script: srun with pyxis, one task per node.\n{_REF_HELP}")
@click.argument("ref")
@_image
@click.option(
    "--squashfs",
    metavar="PATH",
    help="Run an enroot squashfs on a shared filesystem (repro image export --format enroot) "
    "instead of pulling from the registry.",
)
@click.option(
    "--hub-cache", metavar="DIR", help="Hub cache directory (default $HOME/.cache/huggingface)."
)
@click.option("--partition", "-p", help="#SBATCH --partition.")
@click.option("--account", "-A", help="#SBATCH --account.")
@click.option("--time", "-t", "time_limit", help="#SBATCH --time, e.g. 04:00:00.")
@click.option("--job-name", "-J", help="#SBATCH --job-name (default: the recipe name).")
@_dist_port
@_output
def slurm(
    ref: str,
    image: str | None,
    squashfs: str | None,
    hub_cache: str | None,
    partition: str | None,
    account: str | None,
    time_limit: str | None,
    job_name: str | None,
    dist_port: int,
    output: Path | None,
) -> None:

    options = SlurmOptions(
        image=image,
        squashfs=squashfs,
        hub_cache=hub_cache,
        partition=partition,
        account=account,
        time=time_limit,
        job_name=job_name,
        dist_port=dist_port,
    )
    write_output(render_slurm(_load(ref), options), output, mode=0o755)
