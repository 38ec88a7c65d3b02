"""One function per stage of `repro run`, each a thin call into that stage's module.

A stage takes the shared RunContext, does its work, stores what later stages need on the
context (and in the run directory, so `--resume` can pick it up) and returns a one-line
summary. User-fixable failures are ReproErrors; the runner turns them into a stage exit code.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from repro.errors import ReproError
from repro.lock import fetch_recipe, load_locked, lock_recipe, with_lock
from repro.recipe import image_for_recipe
from repro.run.context import RunContext


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
    from repro.image import locked_image

    image = ctx.locked.image
    if image is not None and image.pinned:
        ctx.image_tag = locked_image.pull_for(ctx.locked)
        ctx.save()
        return f"pulled and verified {ctx.image_tag}"
    with console.status(f"building the image of {ctx.recipe.name}") as status:
        built = locked_image.build_for(
            ctx.locked,
            lambda line: status.update(f"[dim]{line[:110]}[/]"),
            lambda message: console.print(f"  {message}"),
        )
    ctx.image_tag = built.tag
    lock_path = with_lock(ctx.locked, required=False).lock_path
    if lock_path is not None:
        ctx.locked = load_locked(lock_path)  # now carrying the image's own catalog
    ctx.save()
    return f"{built.tag} ({built.fingerprint[:19]})"


def stage_fetch(ctx: RunContext, console: Console) -> str:
    if ctx.simulated:
        return "nothing to download: the simulator needs no weights"
    from repro.hub.cache import human_bytes

    report = fetch_recipe(ctx.locked, on_event=lambda m: console.print(f"  {m}"))
    return f"{human_bytes(report.needed_bytes)} downloaded into {report.cache_dir}"


def stage_doctor(ctx: RunContext, console: Console) -> str:
    from repro.topology import collect_fingerprint, diagnose, requirements_from_recipe

    lock = ctx.locked.lock
    image = image_for_recipe(ctx.recipe, lock) if lock is not None else None
    requirements = requirements_from_recipe(ctx.recipe, image)
    repos = [requirements.model_repo] if requirements.model_repo else []
    report = diagnose(collect_fingerprint(repos=repos), requirements)
    failed = [f for f in report.findings if f.status == "fail"]
    (ctx.run_dir / "machine.json").write_text(report.fingerprint.model_dump_json(indent=2))
    if failed:
        lines = "; ".join(f"{f.check}: {f.message}" for f in failed)
        raise ReproError(
            f"this machine cannot run {ctx.recipe.name}: {lines}",
            hint="`repro doctor " + ctx.ref + "` shows every check; `make demo` runs the "
            "pipeline on the CPU simulator",
        )
    return f"{len(report.findings)} checks passed"


def stage_launch(ctx: RunContext, console: Console) -> str:
    from repro.launch import launch
    from repro.launch.from_recipe import launch_spec_for

    if ctx.image_tag is None:
        raise ReproError("no image for this run", hint="run the image stage first")
    spec = launch_spec_for(ctx.locked, ctx.image_tag, host_port=ctx.port)
    ctx.deployment = spec.name
    ctx.save()
    with console.status(f"starting {spec.name}") as status:
        ctx.url = launch(
            spec,
            lambda p: status.update(
                f"{spec.name}: {p.state}, {p.elapsed_s:.0f} s [dim]{p.last_log_line[-90:]}[/]"
            ),
        )
    ctx.save()
    return f"healthy at {ctx.url}"


def stage_accept(ctx: RunContext, console: Console) -> str:
    if ctx.recipe.drafter is None or ctx.recipe.accept is None:
        return "skipped: no drafter"
    from repro.bench.accept import AcceptOptions, run_accept

    [result] = run_accept(
        [ctx.recipe],
        AcceptOptions(urls=[_url(ctx)], output=ctx.run_dir / "accept", collect_machine=False),
    )
    lengths = ", ".join(f"{s['prompt_set']} {s['accept_length']:.2f}" for s in result.sets)
    return f"acceptance length: {lengths}"


def stage_bench(ctx: RunContext, console: Console) -> str:
    from repro.bench.sweep import BenchOptions, run_bench

    record = ctx.run_dir / "bench"
    started = (record / "run.json").is_file()  # an interrupted sweep: keep its finished levels
    options = BenchOptions(
        url=_url(ctx),
        output=None if started else record,
        resume=record if started else None,
        server_log=ctx.server_log,
    )
    result = run_bench(ctx.recipe, options, _LevelPrinter(console))
    if result.status != "complete":
        raise ReproError(f"the sweep ended {result.status}: {result.error}")
    peak = max((level.get("output_throughput") or 0.0) for level in result.levels)
    return f"{len(result.levels)} levels, peak {peak:.1f} output tok/s"


class _LevelPrinter:
    """bench's Progress protocol: a line per finished level (requests are too many to print)."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def level_started(self, concurrency: int, repeat: int, total: int) -> None:
        self.console.print(f"  concurrency {concurrency} (repeat {repeat}): {total} requests")

    def request_done(self, result: object) -> None:
        return None

    def level_done(self, summary: dict[str, object]) -> None:
        self.console.print(
            f"    {summary.get('output_throughput', 0):.1f} output tok/s, "
            f"median TTFT {summary.get('median_ttft_ms', 0):.1f} ms, "
            f"accept length {summary.get('accept_length')}"
        )


def stage_report(ctx: RunContext, console: Console) -> str:
    from repro.report import load_runs, render_html, render_markdown, render_rich, write_plots
    from repro.report.table import build_report

    runs = load_runs([p for p in (ctx.run_dir / "bench", ctx.run_dir / "accept") if p.is_dir()])
    out = ctx.run_dir / "report"
    out.mkdir(exist_ok=True)
    bench_runs = [r for r in runs if r.run.kind == "bench"]
    table = build_report(bench_runs, "output_throughput", None)
    console.print(render_rich(table))
    _write(out / "report.md", render_markdown(table))
    html = out / "report.html"
    _write(html, render_html(runs, None, ("output_throughput", "ttft")))
    console.print(f"  report: {html}")
    for png in write_plots(runs, out):
        console.print(f"  plot:   {png}")
    return str(html)


def _url(ctx: RunContext) -> str:
    if ctx.url is None:
        raise ReproError("no server for this run", hint="run the launch stage first")
    return ctx.url


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def stage_stop(ctx: RunContext, console: Console) -> str:
    if ctx.deployment is None:
        return "nothing to stop"
    name = ctx.deployment
    _save_server_log(ctx)
    ctx.stop_server()
    return f"stopped {name}"


def _save_server_log(ctx: RunContext) -> None:
    from repro.launch.deploy import container_of, last_log_lines, load_spec

    spec = load_spec(ctx.deployment or "")
    container = container_of(spec) if spec else None
    if container is not None:
        lines = last_log_lines(container, 2000)
        (ctx.run_dir / "server.log").write_text("\n".join(lines) + "\n")


STAGE_FUNCTIONS: dict[str, Callable[[RunContext, Console], str]] = {
    "lock": stage_lock,
    "image": stage_image,
    "fetch": stage_fetch,
    "doctor": stage_doctor,
    "launch": stage_launch,
    "accept": stage_accept,
    "bench": stage_bench,
    "report": stage_report,
    "stop": stage_stop,
}

STAGE_DESCRIPTIONS: dict[str, Callable[[RunContext], str]] = {
    "lock": lambda ctx: (
        "use the lock as given"
        if ctx.locked.lock is not None
        else "pin model, drafter, image and patches"
    ),
    "image": lambda ctx: f"build or find the image of spec {ctx.recipe.image}",
    "fetch": lambda ctx: (
        "nothing to download (simulated)"
        if ctx.simulated
        else f"download {ctx.recipe.model.repo} and drafter, after a disk check"
    ),
    "doctor": lambda ctx: "check GPUs, topology, engine and disk against the recipe",
    "launch": lambda ctx: "start the server with Docker Compose, wait for /health_generate",
    "accept": lambda ctx: (
        "acceptance length per prompt set"
        if ctx.recipe.drafter is not None
        else "skipped: no drafter"
    ),
    "bench": lambda ctx: f"concurrency sweep {ctx.recipe.bench.concurrencies}",
    "report": lambda ctx: "table, HTML and plots",
    "stop": lambda ctx: "stop the server (kept with --keep)",
}
