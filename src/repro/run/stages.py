"""One function per stage of `repro run`, each a thin call into that stage's module (their
order, and how the plan describes each, is `repro.run.pipeline.STAGES`).

A stage takes the shared RunContext, does its work, stores what later stages need on the
context (and in the run directory, so `--resume` can pick it up) and returns a one-line
summary. User-fixable failures are ReproErrors; the runner turns them into a stage exit code.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from repro.bench.slo import search_summary
from repro.bench.target import BenchTarget
from repro.doctor import collect_fingerprint, diagnose, requirements_from_locked
from repro.errors import ReproError
from repro.fsutil import write_atomic
from repro.live import status_line, sweep_bars
from repro.lock import fetch_recipe, load_locked, lock_recipe, with_lock
from repro.run.context import RunContext
from repro.schema.level import Level
from repro.schema.recipe import Bench
from repro.units import human_bytes

# What doctor does not check for a simulated run (`repro run R --sim`).
SIMULATED_NEEDS_NONE = {
    "gpus": 0,
    "gpu_models": [],
    "min_gpu_memory_gb": None,
    "interconnect": "any",
    "architectures": [],
    "weights_bytes": None,
    "model_repo": None,
}


def stage_lock(ctx: RunContext, console: Console) -> str:
    if ctx.locked.lock is not None:  # a lock given: run exactly what it pins
        ctx.save()
        return f"using {ctx.locked.lock_path} as given (nothing re-resolved)"
    result = lock_recipe(ctx.locked)
    ctx.locked = load_locked(result.path)  # from here on, the run uses exactly what is pinned
    ctx.save()
    return f"{result.path} ({'written' if result.written else 'unchanged'})"


def stage_image(ctx: RunContext, console: Console) -> str:
    """Pull by digest when the lock records a pushed image (another cluster's bytes), else
    build; either way the content fingerprint is what the lock keeps."""
    from repro.image import locked_image  # deferred: python_on_whales

    image = ctx.locked.image
    if image is not None and image.pinned:
        ctx.image_tag = locked_image.pull_for(ctx.locked)
        ctx.save()
        return f"pulled and verified {ctx.image_tag}"
    with console.status(f"building the image of {ctx.recipe.name}") as status:
        built, ctx.locked = locked_image.build_for(
            ctx.locked,
            lambda line: status.update(f"[dim]{escape(line[:110])}[/]"),
            lambda message: console.print(f"  {escape(message)}"),
        )
    ctx.image_tag = built.tag  # ctx.locked now carries the image's own catalog
    ctx.save()
    return f"{built.tag} ({built.fingerprint[:19]})"


def stage_fetch(ctx: RunContext, console: Console) -> str:
    if ctx.simulated:
        return "nothing to download: the simulator needs no weights"

    report = fetch_recipe(ctx.locked, on_event=lambda m: console.print(f"  {escape(m)}"))
    return f"{human_bytes(report.needed_bytes)} downloaded into {report.cache_dir}"


def stage_doctor(ctx: RunContext, console: Console) -> str:
    requirements = requirements_from_locked(ctx.locked)
    if ctx.simulated:  # the simulator loads no weights and uses no GPU
        requirements = requirements.model_copy(update=SIMULATED_NEEDS_NONE)
    repos = [requirements.model_repo] if requirements.model_repo else []
    report = diagnose(collect_fingerprint(repos=repos), requirements)
    failed = [f for f in report.findings if f.status == "fail"]
    ctx.folder.write_machine(report.fingerprint.recorded())
    if failed:
        lines = "; ".join(f"{f.check}: {f.message}" for f in failed)
        raise ReproError(
            f"this machine cannot run {ctx.recipe.name}: {lines}",
            hint=f"`repro doctor {ctx.ref}` shows every check; `repro run {ctx.ref} --sim` "
            "runs this recipe on the CPU simulator",
        )
    skipped = "; simulated: weight and GPU checks skipped" if ctx.simulated else ""
    return f"{len(report.findings)} checks passed{skipped}"


def stage_launch(ctx: RunContext, console: Console) -> str:
    # deferred: python_on_whales
    from repro.launch import launch
    from repro.launch.deploy import host_port_for
    from repro.launch.from_recipe import launch_spec_for

    if ctx.image_tag is None:
        raise ReproError("no image for this run", hint="run the image stage first")
    if ctx.locked.image is not None:  # checked again: a resumed run may find another image
        from repro.image.locked_image import check_local_image  # deferred: python_on_whales

        check_local_image(ctx.locked, ctx.locked.image)
    port = ctx.port
    if port is None:  # the recipe's port, unless something here already listens on it
        port = host_port_for(ctx.recipe.server.port)
        if port != ctx.recipe.server.port:
            console.print(f"port {ctx.recipe.server.port} is in use here: publishing on {port}")
    spec = launch_spec_for(ctx.locked, ctx.image_tag, host_port=port)
    with console.status(f"starting {spec.name}") as status:
        ctx.url = launch(
            spec,
            lambda p: status.update(
                status_line(
                    console, f"{spec.name}: {p.state}, {p.elapsed_s:.0f} s", p.last_log_line
                )
            ),
        )
    # Recorded as this run's only once it started it: a failed launch (a deployment of that
    # name already running) must not make the run stop someone else's server. A launch that
    # fails or is interrupted stops what it started itself.
    from repro.launch.deploy import running_container_id  # deferred: python_on_whales

    ctx.deployment = spec.name
    ctx.container_id = running_container_id(spec.name)
    ctx.save()
    return f"healthy at {ctx.url}" + (clock_warning(ctx.url) if ctx.simulated else "")


def clock_warning(url: str) -> str:
    """What the simulator measured at start: a time-scale below what this host keeps."""
    from repro.bench.session import read_server_info  # deferred: the bench client

    try:
        info = read_server_info(url)
    except ReproError:
        return ""
    scale, clock = info.sim_time_scale, info.sim_clock
    floor = clock.min_time_scale if clock else None
    if scale is None or floor is None or not 0 < scale < floor:
        return ""
    return (
        f"; warning: time-scale {scale:g} is below {floor:.2g}, the smallest this host keeps "
        "for the profile: levels where the simulator falls behind will be invalid"
    )


def stage_accept(ctx: RunContext, console: Console) -> str:
    if ctx.recipe.drafter is None:
        return "skipped: no drafter"
    if ctx.recipe.accept is None:
        return "skipped: the recipe has no `accept:` section"
    from repro.bench.accept.runner import AcceptOptions, run_accept  # deferred: numpy
    from repro.run.provenance import local_provenance

    url = _url(ctx)
    with console.status("measuring acceptance") as status:
        [result] = run_accept(
            [_target(ctx)],
            AcceptOptions(
                urls=[url],
                output=ctx.folder.accept.path,
                provenance=local_provenance([url], machine=False),  # doctor wrote machine.json
                progress=lambda line: status.update(escape(line)),
            ),
        )
    lengths = ", ".join(f"{s.prompt_set} {s.accept_length:.2f}" for s in result.sets)
    forced = result.results.forced_acceptance
    scored = result.accuracy.sets if result.accuracy is not None else []
    accuracy = "".join(f"; accuracy {s.prompt_set} {s.correct}/{s.asked}" for s in scored)
    return f"acceptance length{f' ({forced.label()})' if forced else ''}: {lengths}{accuracy}"


def stage_bench(ctx: RunContext, console: Console) -> str:
    from repro.bench.sweep import BenchOptions, run_bench  # deferred: numpy
    from repro.run.provenance import local_provenance

    record = ctx.folder.bench
    started = record.has_run()  # an interrupted sweep: keep its finished levels
    url = _url(ctx)
    options = BenchOptions(
        url=url,
        output=None if started else record.path,
        resume=record.path if started else None,
        provenance=local_provenance([url], machine=False),  # doctor wrote machine.json
    )
    with sweep_bars(console) as bars:
        result = run_bench(_target(ctx), options, bars)
    if result.status != "complete":
        raise ReproError(f"the sweep ended {result.status}: {result.error}")
    summary = bench_summary(result.levels, ctx.recipe.bench)
    search = ctx.recipe.bench.slo_search
    if search is not None:
        summary += f"; {search_summary(result.levels, search, ctx.recipe.bench.concurrencies)}"
    return summary


def bench_summary(levels: list[Level], bench: Bench) -> str:
    """`N levels, peak X output tok/s @c=C` (@r=R/s, @trace Sx) over the valid levels only,
    with a note where the peak level sent all its prompts at once (its prefill is in the
    number: not steady decode) and the first invalid level's reason."""
    valid = [level for level in levels if level.valid]
    summary = f"{len(levels)} levels"
    if valid:
        best = max(valid, key=lambda level: level.output_throughput)
        summary += f", peak {best.output_throughput:.1f} output tok/s @{best.load.label}"
        prompts = bench.level_prompts(best.load)
        if best.arrival is None and best.concurrency >= prompts:
            summary += (
                f" (one wave: its {prompts} prompts start together, so their "
                "prefill is in the number, not steady decode)"
            )
    else:
        summary += ", no valid level: no peak"
    invalid = [level for level in levels if not level.valid]
    if invalid:  # e.g. a simulator behind its clock: say it where the run ends
        first = invalid[0]
        summary += (
            f"; {len(invalid)} invalid ({first.load.label}: {first.reasons[0]})"
            if first.reasons
            else f"; {len(invalid)} invalid"
        )
    return summary


def stage_report(ctx: RunContext, console: Console) -> str:
    # deferred: matplotlib
    from repro.report import load_runs, render_html, render_markdown, render_rich, write_plots
    from repro.report.table import build_report
    from repro.tables import fit

    runs = load_runs([ctx.run_dir])  # its bench/ part, with accept/'s results
    out = ctx.folder.report_dir
    out.mkdir(exist_ok=True)
    table = build_report(runs, "output_throughput", None)
    console.print(fit(render_rich(table)))
    write_atomic(ctx.folder.report_markdown_file, render_markdown(table))
    html = ctx.folder.report_html_file
    write_atomic(html, render_html(runs, None, ("output_throughput", "ttft")))
    console.print(f"  report: {escape(str(html))}")
    for png in write_plots(runs, out):
        console.print(f"  plot:   {escape(str(png))}")
    return str(html)


def _target(ctx: RunContext) -> BenchTarget:
    """The recipe with the lock the run launched (the current `locks/<recipe>.lock.json` when
    the context holds none)."""
    return BenchTarget.from_locked(with_lock(ctx.locked, required=False), ctx.ref)


def _url(ctx: RunContext) -> str:
    if ctx.url is None:
        raise ReproError("no server for this run", hint="run the launch stage first")
    return ctx.url


def stage_stop(ctx: RunContext, console: Console) -> str:
    if ctx.deployment is None:
        return "nothing to stop"
    name = ctx.deployment
    ctx.stop_server()  # keeps the server's log first
    return f"stopped {name}"
