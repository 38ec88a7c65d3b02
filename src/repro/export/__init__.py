"""Manifests for the clusters that already run the machines: Kubernetes LeaderWorkerSet and
Slurm with pyxis/enroot, from the same recipe and the same image digest. repro writes them;
the cluster runs them (no orchestration here).

    render_k8s(locked, K8sOptions(...)) -> str      # LWS (or Deployment) + Service, YAML
    k8s_manifests(locked, K8sOptions(...)) -> list  # the same as data
    render_slurm(locked, SlurmOptions(...)) -> str  # an sbatch script
    image_for_export(locked, explicit) -> PinnedImage
    unpinned_warning(locked) -> str | None          # a recipe without its lock: revisions float

`locked` is a recipe with its lock (`repro.lock.load_locked`): the lock's pushed image digest
is what the manifests run.
"""

from repro.export.common import unpinned_warning, write_output
from repro.export.image import ExportError, PinnedImage, image_for_export, parse_pinned
from repro.export.k8s import K8sOptions, k8s_manifests, render_k8s
from repro.export.slurm import SlurmOptions, render_slurm

__all__ = [
    "ExportError",
    "K8sOptions",
    "PinnedImage",
    "SlurmOptions",
    "image_for_export",
    "k8s_manifests",
    "parse_pinned",
    "render_k8s",
    "render_slurm",
    "unpinned_warning",
    "write_output",
]
