"""`repro export k8s|slurm REF [-o FILE]`: manifests for other clusters, pinned by digest."""

from __future__ import annotations

from pathlib import Path

import click

from repro.cli.options import PORT
from repro.export import (
    K8sOptions,
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
@click.option("--namespace", "-n", help="metadata.namespace of every object.")
@click.option("--name", help="Object name (default: the recipe name).")
@_image
@click.option("--hub-cache-pvc", metavar="CLAIM", help="PersistentVolumeClaim with the Hub cache.")
@click.option(
    "--hub-cache-host-path",
    metavar="DIR",
    help="Hub cache directory on every node (default /var/cache/huggingface).",
)
@click.option(
    "--hf-token-secret",
    default="hf-token",
    show_default=True,
    metavar="SECRET[:KEY]",
    help="Secret (and key, default 'token') that HF_TOKEN is read from.",
)
@click.option("--shm-size", metavar="QUANTITY", help="Size limit of /dev/shm, e.g. 64Gi.")
@_dist_port
@_output
def k8s(
    ref: str,
    namespace: str | None,
    name: str | None,
    image: str | None,
    hub_cache_pvc: str | None,
    hub_cache_host_path: str | None,
    hf_token_secret: str,
    shm_size: str | None,
    dist_port: int,
    output: Path | None,
) -> None:

    secret, _, key = hf_token_secret.partition(":")
    options = K8sOptions(
        namespace=namespace,
        name=name,
        image=image,
        hub_cache_pvc=hub_cache_pvc,
        hub_cache_host_path=hub_cache_host_path,
        hf_token_secret=secret,
        hf_token_key=key or "token",
        dist_port=dist_port,
        shm_size=shm_size,
    )
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
