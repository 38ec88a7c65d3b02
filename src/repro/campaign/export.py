"""A campaign fanned out on Slurm, and its results collected back.

`repro campaign export slurm FILE` makes the campaign folder (plan, point recipes, the image
specs they name, index), locks every measured point into `locks/<point>.lock.json` (as the
Kubernetes export does: a task that starts hours later on another node runs what the export
resolved, never `main` as it is then) and writes `campaign.sbatch` in it: a job array with
one task per measured point. Each task runs its point as Slurm clusters run a server: the
lines `repro export slurm LOCK` writes (repro.export.slurm.server_steps: the pinned image
through pyxis/enroot, the Hub cache mounted, the weights pre-fill, one srun step per node),
kept in `slurm/<point>.sh`, in the background; it waits for `/health_generate` (a deadline),
then measures the server with `repro run LOCK --url http://127.0.0.1:PORT --runs-dir
<campaign>/points/<point>` (lock, accept, bench, report: no Docker), so every point's run
folder lands where `repro campaign run` would put it, and stops the server step when it
ends. A point's image must be pushed (`repro image push`): enroot pulls it by digest.

A simulated point (a simulator recipe, or every point with `--sim`: its twin, made at
export under `points/<point>/sim-twin/`) runs the simulator from repro's own install on the
node (`repro sim serve`), in no container, and asks for no GPU. The job changes to the
campaign folder (`--chdir`), which holds everything a point reads: it can be submitted from
any directory, and the folder must be on a filesystem the nodes share. Each node needs repro
(and pyxis for a GPU point), no Docker. A task holds its point's GPUs, not the node, unless
`--exclusive`; the campaign's points listen on ports of their own, so two of its tasks can
share a node. `repro campaign collect DIR` then reads each point's run folder back into
`index.json`, after which `repro campaign report DIR` gives the decision as for a local run.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from repro.campaign.execute import start_campaign
from repro.campaign.folder import CAMPAIGNS_DIR, CampaignFolder
from repro.campaign.pinning import lock_point
from repro.errors import ReproError
from repro.export.slurm import SlurmOptions, prepared, sbatch_line, server_steps
from repro.lock import load_locked
from repro.run.simulate import simulated_recipe
from repro.runfolder import RunFolder, RunRecordError
from repro.schema.campaign import CampaignIndex, CampaignPlan, PlannedPoint
from repro.schema.lock import Locked
from repro.shellquote import comment, word

SBATCH_FILE = "campaign.sbatch"
SERVERS_DIR = "slurm"  # slurm/<point>.sh: the point's server steps
SIM_TWIN_DIR = "sim-twin"  # points/<point>/sim-twin/: a --sim point's twin recipe
START_LIMIT_S = 2 * 3600  # a 1T-parameter checkpoint loads for tens of minutes
HEALTH_POLL_S = 5
SERVER_FAILED = "server.failed"  # points/<point>/server.failed: its server never answered
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
    hub_cache: str | None = None  # the nodes' Hub cache (default ~/.cache/huggingface)
    base_port: int | None = None  # the first point's port, one more for each next point


@dataclass(frozen=True)
class _Served:
    """One point as its task runs it."""

    name: str
    target: str  # what `repro run --url` measures: the lock, or a simulated twin recipe
    port: int
    gpus: int


def export_slurm(source: Path, opts: CampaignSlurmOptions, console: Console) -> CampaignFolder:
    """The campaign folder of `source` with its job-array script (see the module docstring);
    nothing is left behind when a point cannot be exported."""
    for name, value in (("partition", opts.partition), ("account", opts.account)):
        sbatch_line(name, value)  # refused before any folder is made
    sbatch_line("time", opts.time)
    _sbatch_path(opts.campaigns_dir.resolve())
    folder, plan, _index = start_campaign(
        source, opts.campaigns_dir, console, opts.sim, opts.time_scale
    )
    try:
        measured = [p for p in plan.points if p.same_server_as is None]
        served = [_serve(folder, p, i, opts, console) for i, p in enumerate(measured)]
        _write(folder, plan, served, opts)
    except ReproError:
        folder.remove()  # a refused export leaves no half-made campaign behind
        raise
    return folder


def _serve(
    folder: CampaignFolder,
    point: PlannedPoint,
    number: int,
    opts: CampaignSlurmOptions,
    console: Console,
) -> _Served:
    """The point locked (or its simulated twin made) and its server steps written."""
    if opts.sim:
        twin_dir = folder.point_dir(point.name) / SIM_TWIN_DIR
        ref = simulated_recipe(str(folder.inside(point.recipe)), twin_dir, None, opts.time_scale)
        locked = load_locked(str(ref))
    else:
        ref = lock_point(folder, point)
        locked = load_locked(str(ref))
    if locked.recipe.topology.nodes > 1:
        raise ReproError(
            f"point {point.name} spans {locked.recipe.topology.nodes} nodes: a job array "
            "task holds one",
            hint=f"export it alone: `repro export slurm {folder.lock_file(point.name)}`",
        )
    simulated = locked.recipe.simulator is not None
    first = opts.base_port or locked.recipe.server.port
    port = first + number  # the campaign's tasks may share a node: each its own port
    slurm = SlurmOptions(hub_cache=opts.hub_cache, container=not simulated)
    if simulated:
        slurm = replace(slurm, launcher=_simulator(opts.repro, locked, port))
    if not simulated:
        locked = _on_port(locked, port)
    p = prepared(locked, slurm)
    console.print(f"  {escape(point.name)}: " + ("simulated" if simulated else "locked"))
    header = comment(f"Point {point.name}: its server, as `repro export slurm` serves it.")
    script = folder.path / SERVERS_DIR / f"{point.name}.sh"
    script.parent.mkdir(exist_ok=True)
    steps = server_steps(p, slurm, exec_server=True)
    script.write_text("\n".join(["#!/bin/bash", header, "set -euo pipefail", *steps]))
    target = str(Path(ref).resolve().relative_to(folder.path.resolve()))
    return _Served(point.name, target, port, p.gpus)


def _on_port(locked: Locked, port: int) -> Locked:
    """The lock's recipe served on `port`."""
    server = locked.recipe.server.model_copy(update={"port": port})
    return replace(locked, recipe=locked.recipe.model_copy(update={"server": server}))


def _simulator(repro: str, locked: Locked, port: int) -> tuple[str, ...]:
    """`repro sim serve` for the point's profile on `port`, the recipe's argv after `--`."""
    assert locked.recipe.simulator is not None
    profile = locked.recipe.simulator.profile
    return (repro, "sim", "serve", "--profile", profile, "--host", "127.0.0.1",
            "--port", str(port), "--")  # fmt: skip


def _write(
    folder: CampaignFolder, plan: CampaignPlan, served: list[_Served], opts: CampaignSlurmOptions
) -> None:
    """`campaign.sbatch`: the array, each task serving its point and measuring it."""
    home = folder.path.resolve()
    array = f"0-{len(served) - 1}" + (f"%{opts.max_parallel}" if opts.max_parallel else "")
    lines = [
        "#!/bin/bash",
        comment(f"Campaign {plan.campaign.name}: one array task per point ({len(served)})."),
        "# Written by `repro campaign export slurm`; collect with `repro campaign collect`.",
        "# Each task serves its point (slurm/<point>.sh: pyxis/enroot, or the simulator) and",
        "# measures it with `repro run --url`: the nodes need repro, not Docker.",
        *sbatch_line("job-name", plan.campaign.name),
        f"#SBATCH --array={array}",  # made of numbers
        *sbatch_line("nodes", 1),
        *sbatch_line("ntasks-per-node", 1),
        *sbatch_line("gpus-per-node", max(s.gpus for s in served) or None),
        *(["#SBATCH --exclusive"] if opts.exclusive else []),
        *sbatch_line("partition", opts.partition),
        *sbatch_line("account", opts.account),
        *sbatch_line("time", opts.time),
        f"#SBATCH --chdir={_sbatch_path(home)}",  # what the points read is in there
        f"#SBATCH --output={_sbatch_path(home / 'points' / 'slurm-%A_%a.out')}",
        "set -euo pipefail",
        f"CAMPAIGN={word(str(home))}",
        f"POINTS=({' '.join(word(s.name) for s in served)})",
        f"TARGETS=({' '.join(word(s.target) for s in served)})",
        f"PORTS=({' '.join(str(s.port) for s in served)})",
        'POINT="${POINTS[$SLURM_ARRAY_TASK_ID]}"',
        'PORT="${PORTS[$SLURM_ARRAY_TASK_ID]}"',
        f'FAILED="$CAMPAIGN/points/$POINT/{SERVER_FAILED}"',
        'OUTPUT="points/slurm-${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}.out"',
        'mkdir -p "$CAMPAIGN/points/$POINT" && rm -f "$FAILED"',
        "fail() {  # why the point has no run: `repro campaign collect` reads it",
        '  echo "$POINT: $1" >&2',
        '  printf \'%s\\n\' "$1" > "$FAILED"',
        "  exit 1",
        "}",
        "",
        f'bash "$CAMPAIGN/{SERVERS_DIR}/$POINT.sh" &',
        "SERVER=$!",
        "# the server step ends with the task, however it ends",
        """trap 'kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true' EXIT""",
        "",
        "healthy() {  # GET /health_generate answers 200 (bash's own TCP: no curl needed)",
        '  exec 3<>"/dev/tcp/127.0.0.1/$PORT" || return 1',
        "  printf 'GET /health_generate HTTP/1.0\\r\\nHost: 127.0.0.1\\r\\n\\r\\n' >&3",
        "  local status=''",
        "  read -r -t 60 status <&3 || true",
        "  exec 3<&- 3>&-",
        '  [[ "$status" == "HTTP/1."?" 200"* ]]',
        "}",
        f"deadline=$((SECONDS + {START_LIMIT_S}))",
        "server_gone() {  # its server step ended: what answers on the port is not it",
        '  kill -0 "$SERVER" 2>/dev/null && return 1',
        '  code=0; wait "$SERVER" || code=$?',
        '  fail "its server exited (code $code) before /health_generate answered; its output '
        'is in $OUTPUT"',
        "}",
        "until ! server_gone && healthy 2>/dev/null && ! server_gone; do",
        "  if (( SECONDS >= deadline )); then",
        f'    fail "its server did not answer /health_generate within {START_LIMIT_S} s; '
        'its output is in $OUTPUT"',
        "  fi",
        f"  sleep {HEALTH_POLL_S}",
        "done",
        "",
        f'{word(opts.repro)} run "$CAMPAIGN/${{TARGETS[$SLURM_ARRAY_TASK_ID]}}" \\',
        '  --url "http://127.0.0.1:$PORT" --runs-dir "$CAMPAIGN/points/$POINT"',
        "",
    ]
    (folder.path / "points").mkdir(exist_ok=True)  # where each task's output file goes
    (folder.path / SBATCH_FILE).write_text("\n".join(lines))


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
        failed_start = folder.point_dir(point.name) / SERVER_FAILED
        if state.run_dir is None:
            if failed_start.is_file():  # its task's own words, one line
                state.status = "failed"
                state.reason = "stage launch failed: " + failed_start.read_text()[:2000].strip()
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
