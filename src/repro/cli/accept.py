"""`repro accept RECIPE...`: acceptance per prompt set, drafters side by side (A/B with paired
intervals), speedup over a baseline, and the lossless check."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from repro.bench.accept.runner import AcceptOptions, AcceptResult, lossless_failure, run_accept
from repro.bench.prompts.benchsets import BENCH_SETS
from repro.bench.target import BenchTarget
from repro.cli import options
from repro.cli.bench import recipe_target
from repro.cli.options import FiniteFloat, given_options, json_option, refuse_with, warn
from repro.errors import ReproError
from repro.report.labels import distinct_pair
from repro.run.provenance import local_provenance, target_url
from repro.runfolder import strict_json
from repro.safetext import clean
from repro.schema.accept import AcceptDiff, AcceptProtocol, AcceptSet, TemplateUse
from repro.schema.base import Interval
from repro.schema.forced import ForcedAcceptance
from repro.schema.recipe import MAX_CONCURRENCY, Accept
from repro.schema.record import ClientLimits
from repro.urls import server_urls

_console = Console(stderr=True, highlight=False)


def _ci(value: float | None, interval: Interval | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" + (f" [{interval.low:.2f}, {interval.high:.2f}]" if interval else "")


def _row(s: AcceptSet) -> list[str]:
    return [
        _ci(s.accept_length_mean_per_request, s.accept_length_mean_per_request_ci95),
        _ci(s.accept_length, s.accept_length_ci95),
        f"{s.mean_output_tokens:.0f}" if s.mean_output_tokens is not None else "-",
        f"{s.speedup:.2f}x" if s.speedup else "-",
        str(s.prompts),
    ]


def accept_table(r: AcceptResult) -> Table:
    """The table a DFlash paper prints, for one recipe."""
    proto = r.results.protocol or AcceptProtocol()
    mark = " (simulated)" if r.simulated else ""
    profile = r.results.simulated_profile
    if profile:
        mark += f" profile {profile.name}"
    if r.results.forced_acceptance is not None:
        mark += f" ({r.results.forced_acceptance.label()})"
    template = proto.chat_template
    switch = template.thinking_switch if isinstance(template, TemplateUse) else None
    table = Table(
        title=f"{r.recipe_name}{mark}: acceptance length, thinking "
        f"{'on' if proto.thinking else 'off'}"
        f"{f' ({switch})' if switch else ''}, concurrency {proto.concurrency}"
    )
    for name in ("prompt set", "per-request mean [95%]", "pooled [95%]", "mean out", "speedup"):
        table.add_column(name, justify="left" if name == "prompt set" else "right")
    table.add_column("n", justify="right")
    for s in r.sets:
        table.add_row(s.prompt_set, *_row(s))
    return table


def diff_table(diffs: list[AcceptDiff]) -> Table:
    """B - A per prompt set; the two runs' names once, in the title, told apart."""
    names = {(d.a, d.b) for d in diffs}
    a, b = distinct_pair(*next(iter(names)), 30) if len(names) == 1 else ("A", "B")
    table = Table(
        title=f"drafter A/B: A = {a}, B = {b}\nper-request mean acceptance, B - A, "
        "paired bootstrap 95%",
        title_justify="left",
    )
    table.add_column("prompt set")
    for name in ("A", "B", "B - A [95%]"):
        table.add_column(name, justify="right")
    table.add_column("verdict")
    for d in diffs:
        table.add_row(
            d.prompt_set,
            "-" if d.a_value is None else f"{d.a_value:.2f}",
            "-" if d.b_value is None else f"{d.b_value:.2f}",
            _ci(d.difference, d.ci95), d.verdict,
        )  # fmt: skip
    return table


def _baseline(ref: str) -> BenchTarget:
    """`--baseline`: a server URL, or a recipe (its server is checked to be that recipe's),
    answering where its deployment does."""
    if ref.startswith(("http://", "https://")):
        return BenchTarget.from_url(ref)
    target = recipe_target(ref)
    return replace(target, url=target_url(target))


@click.command("accept")
@click.argument("recipes", nargs=-1, required=True)
@click.option("--url", "urls", multiple=True, help="Server URL, once per recipe (in order).")
@click.option(
    "--prompt-sets",
    "--prompts",
    "prompt_sets",
    help="Comma-separated prompt sets (also --prompts; -n counts prompts): the benchmark "
    "sets of z-lab's DFlash protocol ("
    + ", ".join(BENCH_SETS)
    + ": Hub datasets pinned to their commit), the offline sets math, code, chat, "
    ".jsonl/.json/.csv/.parquet files, or Hub datasets hf:ORG/NAME[/PATH][@REVISION][:COLUMN], "
    "e.g. --prompts gsm8k,mt-bench,hf:openai/gsm8k/main:question.",
)
@click.option(
    "-n", "--num-prompts", type=options.field_range(Accept, "prompts"), help="Prompts per set."
)
@click.option(
    "--max-new-tokens",
    type=options.field_range(Accept, "max_new_tokens"),
    help="Tokens per prompt (default: 2048 for the benchmark sets, else the recipe's).",
)
@click.option(
    "--thinking/--no-thinking",
    default=None,
    help="Thinking on or off, through the switch the model's chat template reads (thinking, "
    "enable_thinking) [default: the recipe's accept.thinking].",
)
@click.option(
    "--chat-template-fallback",
    is_flag=True,
    help="Render with the built-in ChatML when the model's chat template is not in the local "
    "Hub cache at the pinned commit (the record marks it).",
)
@click.option(
    "--concurrency", type=click.IntRange(1, MAX_CONCURRENCY), default=1, show_default=True
)
@click.option(
    "--baseline",
    help="The same model without the drafter (a recipe or URL): speedup, lossless check.",
)
@click.option(
    "--check-lossless",
    is_flag=True,
    help="Compare output token ids with and without the drafter (needs --baseline), at "
    "--concurrency and at the recipe's top bench concurrency; exit 1 when any differ.",
)
@click.option("--output", type=click.Path(path_type=Path), help="Run folder (or a bench run).")
@click.option(
    "--resume",
    type=click.Path(path_type=Path, exists=True, file_okay=False),
    help="Continue this accept run: its finished prompt sets are kept, the rest measured "
    "(give the recipe and options it was started with).",
)
@click.option("--read-timeout", type=FiniteFloat(min=0), default=3600.0, show_default=True,
              help="Seconds without data (a non-streaming response: until it comes) before a "
              "request fails; 0: no limit.")  # fmt: skip
@click.option("--request-timeout", type=FiniteFloat(min=0), default=3600.0,
              show_default=True,
              help="Seconds a request may take in all; 0: no limit.")  # fmt: skip
@options.forced_acceptance_option()
@json_option("the results")
def accept(
    recipes: tuple[str, ...],
    urls: tuple[str, ...],
    prompt_sets: str | None,
    num_prompts: int | None,
    max_new_tokens: int | None,
    thinking: bool | None,
    chat_template_fallback: bool,
    concurrency: int,
    baseline: str | None,
    check_lossless: bool,
    output: Path | None,
    resume: Path | None,
    read_timeout: float,
    request_timeout: float,
    forced: ForcedAcceptance | None,
    as_json: bool,
) -> None:
    """Measure each RECIPE's acceptance length per prompt set (z-lab's DFlash protocol:
    /flush_cache and warmup, chat-formatted prompts, temperature 0, concurrency 1) and print
    both conventions with 95% intervals; with two recipes, their paired difference.

    Writes accept.json into a run folder per recipe and prints the folders on stdout.
    """
    if resume is not None:
        ctx = click.get_current_context()
        refuse_with(
            ctx,
            given_options(ctx, "output", "check_lossless") + list(recipes[1:]),
            "cannot be combined with --resume: it continues one recipe's run in its folder",
        )
    checked_urls = server_urls(urls, warn)  # a bad URL fails before any recipe is read
    targets = [recipe_target(ref) for ref in recipes]
    checked_urls = checked_urls or [target_url(t) for t in targets]
    base = _baseline(baseline) if baseline else None
    measured = [*checked_urls, *([base.server_url()] if base else [])]
    opts = AcceptOptions(
        urls=checked_urls,
        prompt_sets=[s.strip() for s in prompt_sets.split(",") if s.strip()]
        if prompt_sets
        else None,
        prompts=num_prompts,
        max_new_tokens=max_new_tokens,
        thinking=thinking,
        chat_template_fallback=chat_template_fallback,
        forced=forced,
        concurrency=concurrency,
        baseline=base,
        check_lossless=check_lossless,
        output=output,
        resume=resume,
        client=ClientLimits(read_timeout_s=read_timeout, request_timeout_s=request_timeout),
        provenance=local_provenance(measured, machine=resume is None),
    )
    with _console.status("measuring acceptance") as status:
        opts.progress = lambda line: status.update(escape(clean(line)))
        results = run_accept(targets, opts)
    for r in results:
        _console.print(accept_table(r))
        for s in r.sets:
            for reason in s.reasons:
                _console.print(f"[red]{escape(s.prompt_set)}: invalid[/]: {escape(clean(reason))}")
        check = r.results.lossless
        if check is not None:
            for level in check.levels:
                _console.print(
                    f"lossless at concurrency {level.concurrency}: {level.identical}/"
                    f"{level.prompts} outputs identical ({level.identical_share:.0%})"
                )
    if results[0].results.comparison:
        _console.print(diff_table(results[0].results.comparison))
    if as_json:
        doc = [
            {"recipe": r.recipe_name, "run_dir": str(r.run_dir), "simulated": r.simulated,
             "algorithm": r.algorithm, **r.results.model_dump(mode="json")}
            for r in results
        ]  # fmt: skip
        click.echo(strict_json(doc, indent=2))
    else:
        for r in results:
            click.echo(str(r.run_dir))
    for r in results:
        failure = lossless_failure(r.results.lossless)
        if failure:
            raise ReproError(
                f"{r.recipe_name}: {failure}",
                hint=f"speculative decoding changed the greedy output; see {r.run_dir}/accept.json",
            )
