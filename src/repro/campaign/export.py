"""A campaign fanned out on Slurm, and its results collected back.

`repro campaign export slurm FILE` makes the campaign folder (plan, point recipes, the image
specs they name, index), locks every measured point into `locks/<point>.lock.json` (as the
Kubernetes export does: a task that starts hours later on another node runs what the export
resolved, never `main` as it is then) and writes `campaign.sbatch` in it: a job array with
one task per measured point, each running `repro run <campaign>/locks/<point>.lock.json
--runs-dir <campaign>/points/<point>` on its node, so every point's run folder lands where
`repro campaign run` would put it. The job changes to the campaign folder (`--chdir`), which
holds everything a point reads: it can be submitted from any directory. With `--sim` each
task runs the point's recipe on the simulator instead, whose pins are placeholders (nothing
is resolved when it starts). The campaign folder must be on a filesystem the nodes share, and
each node needs repro and a Docker engine (what `repro run` needs anywhere). A task holds
its point's GPUs, not the node, unless `--exclusive`. `repro campaign collect DIR` then
reads each point's run folder back into `index.json`, after which `repro campaign report
DIR` gives the decision as for a local run.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from repro.campaign.execute import start_campaign
from repro.campaign.folder import CAMPAIGNS_DIR, CampaignFolder
from repro.campaign.pinning import lock_point
from repro.errors import ReproError
from repro.export.slurm import sbatch_line
from repro.runfolder import RunFolder, RunRecordError
from repro.schema.campaign import CampaignIndex
from repro.shellquote import comment, word

SBATCH_FILE = "campaign.sbatch"
_SBATCH_VALUE = re.compile(r"^[A-Za-z0-9_.:,+=@/-]{1,200}$")


@dataclass(frozen=True)
class CampaignSlurmOptions:
    campaigns_dir: Path = CAMPAIGNS_DIR
    repro: str = "repro"  # the command each task runs, as found on the nodes
    partition: str | None = None
    account: str | None = None
    time: str | None = None
    max_parallel: int | None = None  # points running at once (the array's %N)
    sim: bool = False  # each point on the simulator (its layout's profile)
    time_scale: float = 1.0
    exclusive: bool = False  # each task holds a whole node, not only its point's GPUs


def export_slurm(source: Path, opts: CampaignSlurmOptions, console: Console) -> CampaignFolder:
    """The campaign folder of `source` with its job-array script (see the module docstring)."""
    for name, value in (("partition", opts.partition), ("account", opts.account)):
        sbatch_line(name, value)  # refused before any folder is made
    sbatch_line("time", opts.time)
    _sbatch_path(opts.campaigns_dir.resolve())
    folder, plan, _index = start_campaign(
        source, opts.campaigns_dir, console, opts.sim, opts.time_scale
    )
    measured = [p for p in plan.points if p.same_server_as is None]
    if not opts.sim:
        try:
            for point in measured:
                lock_point(folder, point)
                console.print(f"  {escape(point.name)}: locked")
        except ReproError:
            folder.remove()  # a refused export leaves no half-made campaign behind
            raise
    home = folder.path.resolve()
    each = folder.recipes_dir / "$POINT.yaml" if opts.sim else folder.lock_file("$POINT")
    run = [opts.repro, "run", f'"$CAMPAIGN/{each.relative_to(folder.path)}"', "--runs-dir"]
    run.append('"$CAMPAIGN/points/$POINT"')
    if opts.sim:
        run += ["--sim", "--time-scale", f"{opts.time_scale:g}"]
    array = f"0-{len(measured) - 1}" + (f"%{opts.max_parallel}" if opts.max_parallel else "")
    lines = [
        "#!/bin/bash",
        comment(f"Campaign {plan.campaign.name}: one array task per point ({len(measured)})."),
        "# Written by `repro campaign export slurm`; collect with `repro campaign collect`.",
        *sbatch_line("job-name", plan.campaign.name),
        f"#SBATCH --array={array}",  # made of numbers
        *sbatch_line("nodes", 1),
        *sbatch_line("gpus-per-node", max(p.gpus for p in measured) or None),
        *(["#SBATCH --exclusive"] if opts.exclusive else []),
        *sbatch_line("partition", opts.partition),
        *sbatch_line("account", opts.account),
        *sbatch_line("time", opts.time),
        f"#SBATCH --chdir={_sbatch_path(home)}",  # what the points read is in there
        f"#SBATCH --output={_sbatch_path(home / 'points' / 'slurm-%A_%a.out')}",
        "set -euo pipefail",
        f"CAMPAIGN={word(str(home))}",
        f"POINTS=({' '.join(word(p.name) for p in measured)})",
        'POINT="${POINTS[$SLURM_ARRAY_TASK_ID]}"',
        f"exec {word(run[0])} {' '.join(run[1:])}",
        "",
    ]
    (folder.path / "points").mkdir(exist_ok=True)  # where each task's output file goes
    script = folder.path / SBATCH_FILE
    script.write_text("\n".join(lines))
    return folder


def collect(folder: CampaignFolder) -> CampaignIndex:
    """Each point's state from its run folder (`stages.json`): done, failed with the failed
    stage's line, or pending when it never started or stopped part-way."""
    plan, index = folder.read_plan(), folder.read_index()
    states = {s.name: s for s in index.points}
    for point in plan.points:
        state = states[point.name]
        if point.same_server_as is not None:
            continue
        state.run_dir = folder.run_dir_for(point.name)
        state.status, state.reason = "pending", None
        if state.run_dir is None:
            continue
        try:
            saved = RunFolder(folder.path / state.run_dir).read_stages()
        except RunRecordError:
            saved = None
        if saved is None:
            continue  # started, no stage finished: it stays to do
        stages = saved.stages
        failed = [s for s in stages if s.status == "failed"]
        if failed:
            state.status = "failed"
            state.reason = f"stage {failed[0].name} failed: {failed[0].summary}"
        elif all(s.status in ("done", "skipped") for s in stages):
            state.status = "done"
    for point in plan.points:
        if point.same_server_as is not None:
            twin = states[point.same_server_as]
            state = states[point.name]
            state.status, state.run_dir = twin.status, twin.run_dir
            state.reason = f"the same server as {point.same_server_as}"
    folder.write_index(index)
    return index


def _sbatch_path(path: Path) -> str:
    text = str(path)
    if not _SBATCH_VALUE.match(text.replace("%", "")):
        raise ReproError(
            f"{json.dumps(text)}: the campaign folder's path has characters an #SBATCH line "
            "cannot hold",
            hint="use --campaigns-dir with a plain path (letters, digits, . _ - /)",
        )
    return text
