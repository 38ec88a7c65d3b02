"""`repro runs`' campaigns: each campaign folder under `<runs>/campaigns/`, its machine and
how far its points are (from `index.json`); a folder whose index cannot be read is listed
with why, never skipped silently."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from repro.campaign.folder import CAMPAIGNS_DIR, CampaignFolder
from repro.runfolder import RunRecordError
from repro.safetext import clean


@dataclass
class CampaignListing:
    folder: str
    campaign: str
    machine: str
    status: str  # "3 of 5 done, 1 failed, 1 pending"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def campaigns_dir_of(runs_dir: Path) -> Path:
    """Where `repro campaign run` puts campaigns when its runs go to `runs_dir`."""
    return runs_dir / CAMPAIGNS_DIR.name


def list_campaigns(runs_dir: Path) -> list[CampaignListing]:
    """Every campaign folder under `runs_dir`'s campaigns folder, oldest first."""
    root = campaigns_dir_of(runs_dir)
    if not root.is_dir():
        return []
    out = []
    for path in sorted(p for p in root.iterdir() if p.is_dir()):
        folder = CampaignFolder(path)
        if not folder.plan_file.is_file():
            continue
        try:
            index = folder.read_index()
        except RunRecordError as err:
            out.append(CampaignListing(str(path), "?", "?", clean(err.message.splitlines()[0])))
            continue
        counts = Counter(state.status for state in index.points)
        status = f"{counts.pop('done', 0)} of {len(index.points)} done"
        status += "".join(f", {n} {what}" for what, n in sorted(counts.items()))
        machine = index.machine
        if index.simulated:
            machine += f", SIMULATED (time-scale {index.time_scale or 0:g})"
        out.append(CampaignListing(str(path), clean(index.campaign), clean(machine), status))
    return out
