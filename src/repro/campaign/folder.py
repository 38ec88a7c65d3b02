"""A campaign folder on disk: the one place its files are named, read and written.

    runs/campaigns/<UTC time>-<campaign>/
      campaign.yaml        the campaign file as given
      plan.json            CampaignPlan: points in run order, shared servers, predictions
      index.json           CampaignIndex: each point's status, run folder and failure reason
      recipes/<point>.yaml each point as an ordinary recipe (its source recipe resolved)
      images/, patches/    the image specs the points name, with their local patches
      locks/<point>.lock.json  each point as a cluster export pinned it
      points/<point>/      the point's `repro run` folder lives in here (one run folder)
      report/              `repro campaign report`'s HTML and plots

Every point's run folder is an ordinary one: `repro report`, `repro compare` and `repro runs`
read it as they read any other.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from repro.fsutil import write_atomic
from repro.runfolder import RunFolder, RunRecordError, fresh_run_dir, read_model, write_model
from repro.schema.campaign import CampaignIndex, CampaignPlan, PointState

CAMPAIGNS_DIR = Path("runs") / "campaigns"
NOT_A_CAMPAIGN = "pass a folder printed by `repro campaign run`"


class CampaignFolder:
    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, name: str, source: Path, base: Path = CAMPAIGNS_DIR) -> CampaignFolder:
        folder = cls(fresh_run_dir(base, name))
        folder.path.mkdir(parents=True)
        shutil.copyfile(source, folder.campaign_file)
        return folder

    @classmethod
    def open(cls, path: Path) -> CampaignFolder:
        folder = cls(path)
        if not folder.plan_file.is_file():
            raise RunRecordError(
                f"{path}: not a campaign folder (no plan.json)", hint=NOT_A_CAMPAIGN
            )
        return folder

    # ---- names --------------------------------------------------------------------------
    @property
    def campaign_file(self) -> Path:
        return self.path / "campaign.yaml"

    @property
    def plan_file(self) -> Path:
        return self.path / "plan.json"

    @property
    def index_file(self) -> Path:
        return self.path / "index.json"

    @property
    def recipes_dir(self) -> Path:
        return self.path / "recipes"

    @property
    def report_dir(self) -> Path:
        return self.path / "report"

    def lock_file(self, point: str) -> Path:
        """`locks/<point>.lock.json`: the point as a cluster export pinned it."""
        return self.path / "locks" / f"{point}.lock.json"

    def remove(self) -> None:
        """Delete the folder (an export refused part-way leaves nothing half-made)."""
        shutil.rmtree(self.path, ignore_errors=True)

    def point_dir(self, name: str) -> Path:
        """Where the point's run folder is made (the folder holds that one run folder)."""
        return self.path / "points" / name

    def run_dir_of(self, state: PointState) -> Path | None:
        return self.path / state.run_dir if state.run_dir else None

    def run_dir_for(self, name: str) -> str | None:
        """The point's run folder (relative to the campaign's), once `repro run` saved its
        context there: a folder killed before that (at most a temp file, or the simulator's
        recipe) is no run, and the point starts afresh."""
        where = self.point_dir(name)
        found = sorted(
            p for p in (where.iterdir() if where.is_dir() else ()) if RunFolder(p).has_context()
        )
        return str(found[-1].relative_to(self.path)) if found else None

    # ---- files --------------------------------------------------------------------------
    def read_plan(self) -> CampaignPlan:
        return read_model(self.plan_file, CampaignPlan, NOT_A_CAMPAIGN)

    def write_plan(self, plan: CampaignPlan) -> None:
        write_model(self.plan_file, plan)

    def read_index(self) -> CampaignIndex:
        return read_model(self.index_file, CampaignIndex, NOT_A_CAMPAIGN)

    def write_index(self, index: CampaignIndex) -> None:
        write_model(self.index_file, index)

    def write_report(self, name: str, text: str) -> Path:
        path = self.report_dir / name
        write_atomic(path, text)
        return path
