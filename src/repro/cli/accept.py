"""`repro accept RECIPE...`: acceptance per prompt set, drafters side by side (A/B with paired
intervals), speedup over a baseline, and the lossless check."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from repro.bench.accept.runner import AcceptResult, lossless_failure, run_accept
from repro.bench.options import AcceptOptions
from repro.bench.prompts.benchsets import BENCH_SETS
from repro.bench.target import BenchTarget
from repro.cli import options
from repro.cli.bench import recipe_target
from repro.cli.options import given_options, json_option, measure_options, refuse_with, warn
from repro.errors import ReproError
from repro.report.accuracy import results_table
from repro.report.labels import distinct_pair
from repro.run.provenance import local_provenance, target_url
from repro.runfolder import RunFolder, strict_json
from repro.safetext import clean
from repro.schema.accept import AcceptDiff, AcceptProtocol, AcceptSet, TemplateUse
from repro.schema.base import Interval
from repro.schema.buckets import parse_buckets
from repro.schema.forced import ForcedAcceptance
from repro.schema.recipe import MAX_CONCURRENCY, Accept
from repro.tables import fit
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


def bucket_table(r: AcceptResult) -> Table | None:
    """Pooled acceptance by context-length and output-position bucket; None without any."""
    rows = [
        (s.prompt_set, kind, b)
        for s in r.sets
        for kind, buckets in (("context", s.by_length), ("output position", s.by_position))
        for b in buckets or []
    ]
    if not rows:
        return None
    table = Table(title=f"{r.recipe_name}: acceptance by bucket (tokens, k = 1024)")
    for name in ("prompt set", "by", "bucket", "pooled [95%]", "steps", "n"):
        table.add_column(
            name, justify="right" if name in ("steps", "n", "pooled [95%]") else "left"
        )
    for name, kind, b in rows:
        table.add_row(
            name, kind, b.bucket, _ci(b.accept_length, b.accept_length_ci95),
            str(b.spec_verify_ct), str(b.prompts),
        )  # fmt: skip
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
            d.prompt_set + (f" {d.bucket}" if d.bucket else ""),
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


def _sets(prompt_sets: str | None, deprecated: str | None) -> list[str] | None:
    if deprecated is not None:
        warn(
            "note: accept --prompts is deprecated: use --prompt-sets (--prompts counts "
            "prompts, as in bench; -n here)"
        )
    given = prompt_sets or deprecated
    return [s.strip() for s in given.split(",") if s.strip()] if given else None


def _targets(recipes: tuple[str, ...], urls: list[str]) -> list[BenchTarget]:
    """The recipes named, else the servers at `urls` as they answer."""
    if recipes:
        return [recipe_target(ref) for ref in recipes]
    if not urls:
        raise ReproError(
            "give a RECIPE or a server --url",
            hint="e.g. repro accept demo, or repro accept --url http://127.0.0.1:30000",
        )
    return [BenchTarget.from_url(url) for url in urls]


@click.command("accept")
@click.argument("recipes", nargs=-1)
@click.option(
    "--url",
    "urls",
    multiple=True,
    help="Server URL, once per recipe (in order); alone, without a RECIPE, the servers to "
    "measure as they answer.",
)
@click.option(
    "--prompt-sets",
    "prompt_sets",
    help="Comma-separated prompt sets: the benchmark sets of z-lab's DFlash protocol ("
    + ", ".join(BENCH_SETS)
    + ": Hub datasets pinned to their commit), longbench-v2 (long real documents, with "
    "--length-buckets), the offline sets math, code, chat, "
    ".jsonl/.json/.csv/.parquet files, or Hub datasets hf:ORG/NAME[/PATH][@REVISION][:COLUMN], "
    "e.g. --prompt-sets gsm8k,mt-bench,hf:openai/gsm8k/main:question.",
)
@click.option("--prompts", "deprecated_sets", hidden=True)  # the old --prompt-sets
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
@click.option(
    "--length-buckets",
    metavar="EDGES",
    help="Acceptance by context length: token buckets LOW-HIGH (k: 1024), e.g. "
    "0-8k,8k-32k,32k-. Each bucket sends the set's first -n prompts of its length "
    "(estimated at 4 characters a token; longer prompts are not sent) and reports the "
    "acceptance of the requests whose prompt_tokens, as the server counted them, fall in it. "
    "For long documents: --prompt-sets longbench-v2.",
)
@click.option(
    "--position-buckets",
    metavar="EDGES",
    help="Acceptance by output position: each verify step counted in the bucket of the first "
    "token it commits, e.g. 0-256,256-1k,1k-. The requests are streamed (one chunk per "
    "verify step), so no lossless check and no drafts histogram in the same run.",
)
@click.option(
    "--accuracy",
    is_flag=True,
    help="Also score the answers of gsm8k-style sets (gsm8k, or a file or hf: set with an "
    "'answer' column): exact match of the final number, Wilson 95%; a server without a "
    "drafter is scored too. With --baseline, exit 1 when the recipe is below it beyond "
    "Newcombe's 95% interval (writes accuracy.json).",
)
@measure_options
@options.forced_acceptance_option()
@json_option("the results")
def accept(
    recipes: tuple[str, ...],
    urls: tuple[str, ...],
    prompt_sets: str | None,
    deprecated_sets: str | None,
    num_prompts: int | None,
    max_new_tokens: int | None,
    thinking: bool | None,
    concurrency: int,
    baseline: str | None,
    check_lossless: bool,
    length_buckets: str | None,
    position_buckets: str | None,
    accuracy: bool,
    forced: ForcedAcceptance | None,
    as_json: bool,
    **shared: Any,
) -> None:
    """Measure each RECIPE's acceptance length per prompt set (z-lab's DFlash protocol:
    /flush_cache and warmup, chat-formatted prompts, temperature 0, concurrency 1) and print
    both conventions with 95% intervals; with two recipes, their paired difference.

    Without a RECIPE, `--url URL` alone measures that server as it answers (the default
    prompt sets, its identity recorded as found, not checked).

    With --accuracy, the answers of gsm8k-style sets are scored too, for the recipe and
    its --baseline (the same model without the drafter): a recipe whose accuracy falls below
    the baseline's beyond the interval exits 1. `repro compare A B` holds two such runs (two
    machines, one lock) against each other. E.g. `repro accept kimi26-ep4-dflash
    --prompt-sets gsm8k -n 200 --accuracy --baseline kimi26-ep4`.

    Writes accept.json (and accuracy.json) into a run folder per recipe and prints the
    folders on stdout.
    """
    if shared["resume"] is not None:
        ctx = click.get_current_context()
        refuse_with(
            ctx,
            given_options(ctx, "output", "check_lossless") + list(recipes[1:]),
            "cannot be combined with --resume: it continues one recipe's run in its folder",
        )
    checked_urls = server_urls(urls, warn)  # a bad URL fails before any recipe is read
    targets = _targets(recipes, checked_urls)
    checked_urls = checked_urls or [target_url(t) for t in targets]
    base = _baseline(baseline) if baseline else None
    measured = [*checked_urls, *([base.server_url()] if base else [])]
    opts = AcceptOptions(
        urls=checked_urls,
        prompt_sets=_sets(prompt_sets, deprecated_sets),
        prompts=num_prompts,
        max_new_tokens=max_new_tokens,
        thinking=thinking,
        forced=forced,
        concurrency=concurrency,
        baseline=base,
        check_lossless=check_lossless,
        length_buckets=parse_buckets(length_buckets, "--length-buckets")
        if length_buckets
        else None,
        position_buckets=(
            parse_buckets(position_buckets, "--position-buckets") if position_buckets else None
        ),
        accuracy=accuracy,
        provenance=local_provenance(measured, machine=shared["resume"] is None),
        **shared,
    )
    with _console.status("measuring acceptance") as status:
        opts.progress = lambda line: status.update(escape(clean(line)))
        results = run_accept(targets, opts)
    for r in results:
        _console.print(accept_table(r))
        buckets = bucket_table(r)
        if buckets is not None:
            _console.print(fit(buckets))
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
        if r.accuracy is not None:
            _console.print(fit(results_table(r.accuracy)))
    if results[0].results.comparison:
        _console.print(diff_table(results[0].results.comparison))
    if as_json:
        doc = [
            {"recipe": r.recipe_name, "run_dir": str(r.run_dir), "simulated": r.simulated,
             "algorithm": r.algorithm, **r.results.model_dump(mode="json"),
             **({"accuracy": r.accuracy.model_dump(mode="json")} if r.accuracy else {})}
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
        regressed = r.accuracy.regressions if r.accuracy is not None else []
        if regressed:
            sets = ", ".join(c.prompt_set for c in regressed)
            raise ReproError(
                f"{r.recipe_name}: accuracy below its baseline beyond the 95% interval on {sets}",
                hint=f"speculative decoding must not change answers; see "
                f"{RunFolder(r.run_dir).accuracy_file}",
            )
