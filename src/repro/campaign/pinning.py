"""Every measured point of a campaign locked at export: `locks/<point>.lock.json`.

A cluster runs a point hours after the export, on another node: what it runs must be what
the export resolved (model and drafter commits, image, patches), never `main` as it is when
the task starts. The Slurm and Kubernetes exports both lock here, and their tasks run the
lock.
"""

from __future__ import annotations

from pathlib import Path

from repro.campaign.folder import CampaignFolder
from repro.lock import load_locked, lock_recipe
from repro.schema.campaign import PlannedPoint


def lock_point(folder: CampaignFolder, point: PlannedPoint) -> Path:
    """The point's recipe locked into the campaign folder (its `lock_file`)."""
    lock_file = folder.lock_file(point.name)
    lock_file.parent.mkdir(exist_ok=True)
    lock_recipe(load_locked(str(folder.path / point.recipe)), output=lock_file)
    return lock_file
