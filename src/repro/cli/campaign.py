"""`repro campaign`: many recipes measured with one plan, ending in a decision."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.markup import escape

from repro.campaign.folder import CAMPAIGNS_DIR
from repro.cli.options import PORT, FiniteFloat, json_option, k8s_options, k8s_pod_options
from repro.exitcodes import ExitCode
from repro.schema.campaign import Campaign, CampaignPlan
from repro.units import human_seconds

F = TypeVar("F", bound=Callable[..., Any])
_console = Console(highlight=False)
_err = Console(stderr=True, highlight=False)

FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
FOLDER = click.Path(exists=True, file_okay=False, path_type=Path)


def _campaigns_dir(folder_help: str) -> Callable[[F], F]:
    return click.option(
        "--campaigns-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=CAMPAIGNS_DIR,
        show_default=True,
        help=folder_help,
    )


def _time_scale() -> Callable[[F], F]:
    return click.option(
        "--time-scale",
        type=FiniteFloat(min=0),
        default=1.0,
        show_default=True,
        help="With --sim: multiply every simulated duration (0.1: ten times faster).",
    )


def _where_and_how(folder_help: str) -> Callable[[F], F]:
    """--sim, --time-scale and --campaigns-dir: the options `run` and `export` share."""

    def apply(command: F) -> F:
        for option in reversed(
            (
                click.option("--sim", is_flag=True, help="Run every point on the CPU simulator."),
                _time_scale(),
                _campaigns_dir(folder_help),
            )
        ):
            command = option(command)
        return command

    return apply


@click.group("campaign")
def campaign() -> None:
    """Campaigns: recipes (or one recipe under a matrix of overrides) measured with one bench
    plan, ending in a decision: the best layout per concurrency, the winner under each SLO,
    the Pareto frontier and where a drafter stops paying.

    \b
      repro campaign plan campaigns/kimi26-layouts.yaml     check, predict
      repro campaign run campaigns/kimi26-layouts.yaml --sim
      repro campaign run --resume runs/campaigns/FOLDER     after a stop
      repro campaign report runs/campaigns/FOLDER [...]     the decision
      repro campaign calibrate campaigns/kimi26-b300.yaml   re-plan here
    """


@campaign.command("plan")
@click.argument("file", type=FILE)
@click.option("--no-predict", is_flag=True, help="Check and order only; no predicted table.")
@click.option(
    "--measured",
    type=FOLDER,
    help="A campaign folder of earlier runs: its measured points replace their predictions.",
)
@click.option(
    "--profile",
    metavar="NAME|PATH",
    help="Predict every point on this simulator profile (a name `repro sim profiles` lists, "
    "or a JSON file such as the profile.json `campaign calibrate` fits), not its layout's.",
)
@json_option("the plan (points, predictions, estimate)")
def plan(
    file: Path, no_predict: bool, measured: Path | None, profile: str | None, as_json: bool
) -> None:
    """Check every point of FILE, order and price them, and predict their results.

    Each point is rendered and checked as `repro recipe check` would (one invalid point
    refuses the campaign before any GPU time is spent). The predicted table is the
    simulator's own model run in virtual time on each point's profile (the one of its
    model, layout and GPU, or --profile's), in seconds; it is a prediction, labelled with
    the profile, not a measurement. A point no profile states names the closest one.
    """
    from repro.campaign.decision import decide
    from repro.campaign.plan import estimate_breakdown, plan_campaign
    from repro.campaign.predict import PLAN_CLOCK
    from repro.campaign.report import predicted_points, render_terminal

    if profile is not None:
        _check_profile(profile)
    result = plan_campaign(
        file,
        predict=not no_predict,
        progress=lambda line: _err.print(escape(line)),
        profile=profile,
    )
    if as_json:
        click.echo(result.model_dump_json(indent=2))
        _exit_incomplete(result)
        return
    points = predicted_points(result)
    if measured is not None:
        from repro.campaign.folder import CampaignFolder
        from repro.campaign.report import measured_points

        done = {p.name: p for p in measured_points(CampaignFolder.open(measured)) if p.levels}
        points = [done.get(p.name, p) for p in points]
    for point in result.points:
        note = f" = {point.same_server_as} (same server)" if point.same_server_as else ""
        base = f", baseline {point.baseline}" if point.baseline else ""
        _console.print(f"  {escape(point.name)}{escape(note)}{escape(base)}")
    if not no_predict:
        decision = decide(points, result.campaign.slos, clock=PLAN_CLOCK)
        _console.print(render_terminal(decision, points))
        shown = {p.profile: p.provenance for p in result.points if p.profile and p.provenance}
        for profile, provenance in shown.items():
            _console.print(f"[dim]{escape(profile)}: {escape(provenance)}[/]")
    if result.estimate_s is not None:
        cost = f", about ${result.usd:,.0f}" if result.usd is not None else ""
        run = [p for p in result.points if p.same_server_as is None]
        some = f" ({len(run) - len(result.unestimated)} of {len(run)} points)"
        some *= bool(result.unestimated)
        _console.print(
            f"estimate{some}: {human_seconds(result.estimate_s)} wall, "
            f"{result.gpu_hours or 0:.1f} GPU-hours{cost}"
        )
        if result.estimate_parts is not None:
            for line in estimate_breakdown(result.estimate_parts):
                _console.print(f"  {escape(line)}")
    if result.unestimated:
        _console.print(
            f"[yellow]not in the estimate (no prediction): "
            f"{escape(', '.join(result.unestimated))}[/]"
        )
    _exit_incomplete(result)


def _check_profile(name: str) -> None:
    """--profile's profile read before any point is, so a typo is one error, not one a point."""
    from repro.errors import ReproError
    from repro.sim.profile import ProfileError, load_profile

    try:
        load_profile(name)
    except ProfileError as err:
        raise ReproError(f"--profile {name}: {err}") from None


def _exit_incomplete(result: CampaignPlan) -> None:
    """Exit INCOMPLETE when a point could not be predicted (after everything is printed)."""
    if result.unestimated:
        click.get_current_context().exit(ExitCode.INCOMPLETE)


@campaign.command("run")
@click.argument("file", type=FILE, required=False)
@click.option("--resume", type=FOLDER, help="Continue this campaign folder (done points kept).")
@click.option("--retry-failed", is_flag=True, help="With --resume: run failed points again.")
@_where_and_how("Where the campaign folder is made.")
def run(
    file: Path | None,
    resume: Path | None,
    retry_failed: bool,
    sim: bool,
    time_scale: float,
    campaigns_dir: Path,
) -> None:
    """Run every point of FILE unattended: launch, accept, sweep, stop, one after another.

    A point that fails is recorded with its reason and the campaign goes on (the exit code
    is then 1, once every point has run). Ctrl-C or a kill keeps every finished point and
    level: continue with --resume FOLDER. Every point's run folder is an ordinary one
    (`repro report` reads it); the campaign folder holds the plan, the points' recipes and
    index.json.
    """
    from repro.campaign.execute import CampaignRunOptions, run_campaign
    from repro.errors import ReproError

    if (file is None) == (resume is None):
        raise ReproError("give a campaign FILE or --resume FOLDER (one of them)")
    folder = run_campaign(
        CampaignRunOptions(
            source=file,
            resume=resume,
            sim=sim,
            time_scale=time_scale,
            campaigns_dir=campaigns_dir,
            retry_failed=retry_failed,
        ),
        _err,
    )
    _console.print(f"campaign folder: {escape(str(folder.path))}")
    _console.print(f"decision: repro campaign report {escape(str(folder.path))}")


@campaign.command("calibrate")
@click.argument("file", type=FILE)
@click.option(
    "--sim",
    "sim_profile",
    metavar="PROFILE",
    help="Run the sweep on the CPU simulator, with PROFILE standing in for the machine.",
)
@_time_scale()
@click.option("--concurrencies", help="The sweep's concurrencies, comma-separated (1,4,16).")
@click.option(
    "--forced",
    help="The drafter point's forced acceptance lengths, comma-separated (default 2 on a "
    "machine: one server; 1,2,4 with --sim).",
)
@_campaigns_dir("Where the calibration's campaign folder is made.")
@click.option(
    "--yes",
    is_flag=True,
    help="Start a sweep estimated longer than 10 minutes without asking (needed when not "
    "run from a terminal).",
)
@json_option("the fitted profile, its held-out band and the plan on it")
def calibrate_command(
    file: Path,
    sim_profile: str | None,
    time_scale: float,
    concurrencies: str | None,
    forced: str | None,
    campaigns_dir: Path,
    yes: bool,
    as_json: bool,
) -> None:
    """Calibrate FILE's predictions on the machine in hand, then plan it again.

    Runs a short sweep (the campaign's first drafter point and its baseline, the drafter's
    acceptance forced to one length on a machine, a few on the simulator, at a few
    concurrencies), fits the machine's step and first-token costs to it (a profile labelled
    with its records, the acceptance kept from the point's profile), and predicts every point
    on it: each value within the fit's held-out error, and where points lie within that band
    of the best, "measure to decide". `repro campaign plan FILE --profile PROFILE.json`
    plans on the fitted profile again later.

    It prints its estimate first (servers, weight loads, levels, time): on a machine each
    server loads the model's weights, so a sweep estimated longer than 10 minutes starts only
    with --yes or when confirmed at a terminal. With --sim it checks the simulator only.
    """
    from repro.campaign.calibrate import (
        CalibrateOptions,
        SweepEstimate,
        calibrate,
        measure_to_decide,
    )
    from repro.campaign.decision import decide
    from repro.campaign.predict import PLAN_CLOCK
    from repro.campaign.report import predicted_points, render_terminal
    from repro.errors import ReproError

    def confirm(estimate: SweepEstimate) -> None:
        for line in estimate.lines():
            _err.print(escape(line))
        if yes or not estimate.asks:
            return
        if not sys.stdin.isatty():
            raise ReproError(
                f"not started: the calibration sweep {estimate.why_asked()}",
                hint="pass --yes to start it",
            )
        click.confirm("start the calibration sweep?", abort=True, err=True)

    options = CalibrateOptions(file, sim_profile, time_scale, campaigns_dir)
    if concurrencies:
        levels = _numbers("--concurrencies", concurrencies, whole=True)
        options.concurrencies = tuple(int(c) for c in levels)
    if forced:
        options.forced = _numbers("--forced", forced)
    result = calibrate(options, _err, confirm)
    points = predicted_points(result.plan)
    decision = decide(points, result.plan.campaign.slos, clock=PLAN_CLOCK)
    median, worst = result.band
    close = measure_to_decide(decision, worst)
    if as_json:
        data = {
            "folder": str(result.folder.path),
            "profile": str(result.profile),
            "band": {"median": median, "worst": worst},
            "measure_to_decide": [{"concurrency": c, "points": names} for c, names in close],
            "checks": _checks(sim_profile),
            "plan": result.plan.model_dump(mode="json"),
        }
        click.echo(json.dumps(data, indent=2))
        return
    _console.print(render_terminal(decision, points))
    _console.print(
        f"every predicted value within {median:.1%} (median) and {worst:.1%} (worst) of "
        "what this machine measures: the fit's held-out error on the sweep"
    )
    for c, names in close:
        _console.print(f"c={c}: {escape(', '.join(names))} within {worst:.1%}: measure to decide")
    _console.print(f"profile: {escape(str(result.profile))}")
    _console.print(f"checks: {escape(_checks(sim_profile))}")
    _console.print(
        f"plan on it: repro campaign plan {escape(str(file))} --profile "
        f"{escape(str(result.profile))}"
    )


def _checks(sim_profile: str | None) -> str:
    """What a calibration's fit stands for: this machine, or the simulator only."""
    if sim_profile is None:
        return "this machine"
    return f"the simulator only (profile {sim_profile} stood in for the machine)"


def _numbers(option: str, text: str, whole: bool = False) -> tuple[float, ...]:
    """A comma-separated list of finite positive numbers (`whole`: whole numbers, never a
    fraction rounded), or the error naming the option."""
    from repro.errors import ReproError

    try:
        values = tuple(float(part) for part in text.split(","))
    except ValueError:
        values = ()
    fits = all(0 < v < float("inf") and (v.is_integer() or not whole) for v in values)
    if not values or not fits:
        kind = "positive whole numbers" if whole else "positive numbers"
        raise ReproError(f"{option} {text[:40]!r}: expected {kind} separated by commas")
    return values


@campaign.command("report")
@click.argument("folders", type=FOLDER, nargs=-1, required=True)
@click.option("--html/--no-html", default=True, help="Also write report/campaign.html.")
@click.option(
    "--against-plan",
    is_flag=True,
    help="Also each level's predicted output tok/s (the plan's) beside the measured one.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the page and plots (default: one campaign's own report/; several "
    "campaigns: a new runs/campaign-reports/<UTC>-<names>/ here).",
)
@click.option(
    "--gpu-hour-usd",
    "prices",
    multiple=True,
    metavar="MACHINE=USD",
    help="The price of one GPU-hour of a machine, over its campaign file's gpu_hour_usd "
    "(repeat per machine).",
)
@json_option("the points and the decision")
def report(
    folders: tuple[Path, ...],
    html: bool,
    against_plan: bool,
    out: Path | None,
    prices: tuple[str, ...],
    as_json: bool,
) -> None:
    """The decision over one or more campaign folders (e.g. one per machine).

    A table of output tok/s by concurrency (* best there, ^ a point's peak), the winner
    under each SLO and each point's highest concurrency meeting it, the points under each
    SLO by $ per million output tokens (the GPU-hour price from each campaign file, or
    --gpu-hour-usd, its source named), each drafter point's lossless verdict against its
    baseline point (a point whose outputs differ is marked [NOT LOSSLESS] wherever it is
    named), the speculation crossover, and the Pareto frontier of tok/s per GPU against
    tok/s per user. Campaigns of several machines are compared on the frontier, at equal
    interactivity and by cost, never at equal concurrency alone; their page goes to a folder
    of its own, so no campaign's own page is replaced.

    \b
      repro campaign report runs/campaigns/RTX runs/campaigns/B200 --out compare/
    """
    from repro.campaign.page import report_dir, write_html
    from repro.campaign.report import campaign_decision, render_terminal

    decision, points = campaign_decision(list(folders), _prices(prices))
    sides = _against_plan(folders) if against_plan else None
    if as_json:
        data: dict[str, Any] = {
            "points": [p.model_dump(mode="json", exclude={"levels"}) for p in points],
            "decision": decision.model_dump(mode="json"),
        }
        if sides is not None:
            data["against_plan"] = [{**s.model_dump(mode="json"), "error": s.error} for s in sides]
        click.echo(json.dumps(data, indent=2))
    else:
        _console.print(render_terminal(decision, points))
        if sides is not None:
            from repro.campaign.against import against_lines

            for line in against_lines(sides):
                _console.print(escape(line))
    if html:
        page = write_html(report_dir(folders, out), decision, points)
        if not as_json:
            _console.print(f"report: {escape(str(page))}")


def _prices(given: tuple[str, ...]) -> dict[str, float]:
    """`--gpu-hour-usd MACHINE=USD` values by machine, or the error naming the bad one."""
    from repro.errors import ReproError

    prices = {}
    for text in given:
        machine, _, usd = text.partition("=")
        try:
            value = float(usd)
        except ValueError:
            value = -1.0
        if not machine or not 0 < value <= 10_000:
            raise ReproError(
                f"--gpu-hour-usd {text!r}: expected MACHINE=USD, a price above 0 and at most "
                "10000 (e.g. b200x8=5.0)"
            )
        prices[machine] = value
    return prices


def _against_plan(folders: tuple[Path, ...]) -> list[Any]:
    """Each folder's levels, predicted by its plan beside measured."""
    from repro.campaign.against import against_plan
    from repro.campaign.folder import CampaignFolder
    from repro.campaign.report import measured_points

    sides = []
    for path in folders:
        folder = CampaignFolder.open(path)
        sides += against_plan(folder.read_plan(), measured_points(folder), folder.plan_file)
    return sides


@campaign.group("export")
def export() -> None:
    """Fan a campaign out on a cluster's scheduler (collect it back with `collect`)."""


@export.command("slurm")
@click.argument("file", type=FILE)
@click.option(
    "--repro",
    "repro_command",
    default="repro",
    show_default=True,
    help="The repro command as the nodes find it (an absolute path works).",
)
@click.option("--partition", help="#SBATCH --partition.")
@click.option("--account", help="#SBATCH --account.")
@click.option("--time", "time_limit", help="#SBATCH --time of each point, e.g. 04:00:00.")
@click.option("--max-parallel", type=click.IntRange(min=1), help="Points running at once.")
@click.option(
    "--exclusive",
    is_flag=True,
    help="#SBATCH --exclusive: each point holds a whole node, not only its GPUs.",
)
@click.option(
    "--hub-cache",
    metavar="DIR",
    help="The Hub cache on the nodes, mounted into each container (default "
    "$HOME/.cache/huggingface).",
)
@click.option(
    "--base-port",
    type=PORT,
    help="The first point's server port, each next point's one more (default: the first "
    "point's recipe port).",
)
@_where_and_how(
    "Where the campaign folder is made (relative to here): a filesystem the nodes share."
)
def export_slurm_command(
    file: Path,
    repro_command: str,
    partition: str | None,
    account: str | None,
    time_limit: str | None,
    max_parallel: int | None,
    exclusive: bool,
    hub_cache: str | None,
    base_port: int | None,
    sim: bool,
    time_scale: float,
    campaigns_dir: Path,
) -> None:
    """Make FILE's campaign folder, lock every point, and write a Slurm job array in it,
    one task per point.

    Each task serves its point as `repro export slurm LOCK` does (the pinned image through
    pyxis/enroot, one srun step; a simulated point, and every point with --sim, runs the
    simulator from repro's install on the node and asks for no GPU), waits for
    /health_generate, then measures it with `repro run LOCK --url` into the campaign folder
    (so it must be on a filesystem the nodes share; each node needs repro, and pyxis for a
    GPU point, not Docker; each point's image pushed: `repro image push`). Submit it from
    any directory with `sbatch FOLDER/campaign.sbatch`, then `repro campaign collect FOLDER`
    and `repro campaign report FOLDER`.
    """
    from repro.campaign.export import SBATCH_FILE, CampaignSlurmOptions, export_slurm

    folder = export_slurm(
        file,
        CampaignSlurmOptions(
            campaigns_dir=campaigns_dir,
            repro=repro_command,
            partition=partition,
            account=account,
            time=time_limit,
            max_parallel=max_parallel,
            sim=sim,
            time_scale=time_scale,
            exclusive=exclusive,
            hub_cache=hub_cache,
            base_port=base_port,
        ),
        _err,
    )
    _console.print(f"campaign folder: {escape(str(folder.path))}")
    _console.print(f"submit: sbatch {escape(str(folder.path / SBATCH_FILE))}")


@export.command("k8s")
@click.argument("file", type=FILE)
@click.option(
    "--bench-image",
    required=True,
    metavar="REPO@sha256:...",
    help="An image with repro on its PATH: each point's bench container.",
)
@click.option(
    "--results-pvc",
    required=True,
    metavar="CLAIM",
    help="A ReadWriteMany PersistentVolumeClaim: every point's run folder lands on it.",
)
@click.option(
    "--image",
    metavar="REPO@sha256:...",
    help="The SGLang image of every point's server (default: each point's pushed lock image).",
)
@click.option(
    "--repro",
    "repro_command",
    default="repro",
    show_default=True,
    help="The repro command in the bench image.",
)
@k8s_pod_options
@_campaigns_dir("Where the campaign folder is made.")
def export_k8s_command(
    file: Path,
    bench_image: str,
    results_pvc: str,
    image: str | None,
    repro_command: str,
    campaigns_dir: Path,
    **pod: Any,
) -> None:
    """Make FILE's campaign folder, lock every point, and write one Kubernetes Job per point.

    Each Job's pod runs the point's server (its lock's argv on the pinned image) as a
    native sidecar (Kubernetes 1.29 or later) and, once it is healthy, `repro run LOCK
    --url` in the bench container, into the results claim. Apply the folder's
    campaign-k8s.yaml, copy the claim's points/ into the folder (kubectl cp), then
    `repro campaign collect FOLDER` and `repro campaign report FOLDER`.
    """
    from repro.campaign.k8s import MANIFEST_FILE, CampaignK8sOptions, export_k8s

    options = CampaignK8sOptions(
        bench_image=bench_image,
        results_pvc=results_pvc,
        server=k8s_options(image=image, **pod),
        campaigns_dir=campaigns_dir,
        repro=repro_command,
    )
    folder = export_k8s(file, options, _err)
    _console.print(f"campaign folder: {escape(str(folder.path))}")
    _console.print(f"apply: kubectl apply -f {escape(str(folder.path / MANIFEST_FILE))}")


@campaign.command("collect")
@click.argument("folder", type=FOLDER)
@json_option("the index (each point's status)")
def collect_command(folder: Path, as_json: bool) -> None:
    """Read the run folders of FOLDER's points (run by a cluster) back into its index."""
    from repro.campaign.export import collect
    from repro.campaign.folder import CampaignFolder

    index = collect(CampaignFolder.open(folder))
    if as_json:
        click.echo(index.model_dump_json(indent=2))
        return
    for state in index.points:
        reason = f" ({state.reason})" if state.reason else ""
        _console.print(f"  {escape(state.name)}: {state.status}{escape(reason)}")


@campaign.command("schema")
def schema() -> None:
    """Print the JSON Schema of a campaign file (for editors)."""
    click.echo(json.dumps(Campaign.model_json_schema(), indent=2))
