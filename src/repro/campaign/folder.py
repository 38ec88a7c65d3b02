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

One process at a time runs a campaign folder (`claim`: an flock like a deployment's, the
holder's pid in the refusal). A campaign folder holds no link and names no path outside it:
one found there when the folder is opened, or a path in plan.json or index.json that leads
out, is refused, so nothing is read or written elsewhere through it. A point's run folder
is believed to be the point's only when it lies in the point's own place and its record ran
the point's recipe: an index.json that names another point's run folder is refused.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from repro.errors import ReproError, short_repr
from repro.fsutil import write_atomic
from repro.launch.claim import folder_claim
from repro.run.simulate import TWIN_SUFFIX
from repro.runfolder import RunFolder, RunRecordError, fresh_run_dir, read_model, write_model
from repro.schema.campaign import CampaignIndex, CampaignPlan, PointState

CAMPAIGNS_DIR = Path("runs") / "campaigns"
NOT_A_CAMPAIGN = "pass a folder printed by `repro campaign run`"


class CampaignBusy(ReproError):
    """Another repro process runs the campaign folder right now."""


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
        folder._refuse_links()
        return folder

    def _refuse_links(self) -> None:
        points = self.path / "points"
        for parent, dirs, files in os.walk(self.path):  # links are listed, never followed
            for name in [*dirs, *files]:
                link = Path(parent, name)
                own = RunFolder(link.parent).sim_images_dir == link  # a `--sim` run's
                if os.path.islink(link) and not (own and link.parent.parent.parent == points):
                    raise RunRecordError(
                        f"{link}: a link inside a campaign folder",
                        hint="repro follows no link there: put the file or folder itself "
                        "in its place, or remove it",
                    )

    def inside(self, relative: str) -> Path:
        """`relative` (a path plan.json or index.json gives) in the folder, refused when it
        leads out of it."""
        path = self.path / relative
        if os.path.isabs(relative) or not path.resolve().is_relative_to(self.path.resolve()):
            raise RunRecordError(
                f"{self.path}: {short_repr(relative)} leads outside the campaign folder",
                hint=NOT_A_CAMPAIGN,
            )
        return path

    @contextmanager
    def claim(self) -> Iterator[None]:
        """Hold the folder for one `repro campaign run` (see the module docstring)."""
        with folder_claim(self.path, lambda holder: CampaignBusy(
            f"campaign folder {self.path} is run by another repro process (pid {holder})",
            hint="wait until it ends, or interrupt it; then `repro campaign run --resume`",
        )):  # fmt: skip
            yield

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
        return self.inside(state.run_dir) if state.run_dir else None

    def measured_run(self, point: str, state: PointState) -> Path | None:
        """The point's run folder as index.json names it, refused unless it is the point's:
        in `points/<point>/`, its record of a recipe named as the point (or its `--sim`
        twin). An index whose points' run folders were swapped or edited would otherwise
        report each point with another's numbers."""
        run_dir = self.run_dir_of(state)
        bench = RunFolder(run_dir).bench if run_dir is not None else None
        if run_dir is None or bench is None or not bench.has_run():
            return run_dir
        ran = bench.read_run().recipe_name
        if not run_dir.resolve().is_relative_to(self.point_dir(point).resolve()):
            problem = f"is not in points/{point}/"
        elif ran not in (point, f"{point}{TWIN_SUFFIX}"):
            problem = f"ran recipe {short_repr(ran)}, not the point's"
        else:
            return run_dir
        raise RunRecordError(
            f"{self.index_file}: point {point}: its run folder "
            f"{short_repr(state.run_dir, 160)} {problem}",
            hint=f"index.json or points/ was edited: with each run folder back in its "
            f"point's place, `repro campaign collect {self.path}` writes index.json again",
        )

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
        plan = read_model(self.plan_file, CampaignPlan, NOT_A_CAMPAIGN)
        for point in plan.points:
            self.inside(point.recipe)
        return plan

    def write_plan(self, plan: CampaignPlan) -> None:
        write_model(self.plan_file, plan)

    def read_index(self) -> CampaignIndex:
        index = read_model(self.index_file, CampaignIndex, NOT_A_CAMPAIGN)
        for state in index.points:
            self.run_dir_of(state)
        return index

    def write_index(self, index: CampaignIndex) -> None:
        write_model(self.index_file, index)

    def write_report(self, name: str, text: str) -> Path:
        path = self.report_dir / name
        write_atomic(path, text)
        return path
