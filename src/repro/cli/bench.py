"""`repro bench RECIPE`: a sweep (concurrencies, request rates or a trace replay) against a
running server, as a run record."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from repro.bench import BenchOptions, parse_slos, run_bench
from repro.bench.slo import search_summary
from repro.bench.target import BenchTarget
from repro.cli.options import (
    FiniteFloat,
    field_range,
    forced_acceptance_option,
    given_options,
    json_option,
    measure_options,
    refuse_with,
    warn,
)
from repro.errors import ReproError
from repro.live import sweep_bars
from repro.lock import load_locked
from repro.run.provenance import keep_server_log, local_provenance, target_url
from repro.runfolder import RunFolder, strict_json
from repro.safetext import clean
from repro.schema.buckets import parse_buckets
from repro.schema.conversation import CACHE_STATES, MAX_TURNS, CacheState, Conversations
from repro.schema.forced import ForcedAcceptance
from repro.schema.level import Level
from repro.schema.recipe import MAX_CONCURRENCY, MAX_REQUEST_RATE, MIN_LEVEL_PROMPTS, Bench
from repro.schema.slo import SloSearch, check_limits
from repro.tables import fit
from repro.urls import server_urls

_console = Console(stderr=True, highlight=False)


def _levels(value: str | None) -> list[int] | None:
    if value is None:
        return None
    try:
        levels = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise ReproError(
            f"--concurrency {value!r} is not a comma-separated list of integers",
            hint="e.g. --concurrency 1,2,4,8",
        ) from None
    if not levels or min(levels) < 1 or max(levels) > MAX_CONCURRENCY:
        raise ReproError(
            f"--concurrency {value!r}: each level is between 1 and {MAX_CONCURRENCY}",
            hint="e.g. --concurrency 1,4,16",
        )
    return list(dict.fromkeys(levels))


def _rates(value: str | None, option: str, example: str) -> list[float] | None:
    """A comma-separated list of positive numbers (rates, speed-ups), each once."""
    if value is None:
        return None
    try:
        levels = [float(v) for v in value.split(",") if v.strip()]
    except ValueError:
        levels = []
    if not levels or not all(0 < v <= MAX_REQUEST_RATE for v in levels):
        raise ReproError(
            f"{option} {value!r} is not a comma-separated list of numbers above 0 "
            f"(at most {MAX_REQUEST_RATE:g})",
            hint=f"e.g. {option} {example}",
        )
    return list(dict.fromkeys(levels))


def _conversation(
    turns: int | None, cache: CacheState | None, bench: Bench | None
) -> Conversations | None:
    """--turns and --cache over the recipe's bench.conversation; None: the recipe's own."""
    planned = bench.conversation if bench else None
    if turns is None and cache is None:
        return None
    if turns is None and planned is None:
        raise ReproError(
            "--cache applies to multi-turn levels, and none is asked for",
            hint="add --turns N (e.g. --turns 4 --cache warm)",
        )
    return Conversations(
        turns=turns if turns is not None else planned.turns if planned else 2,
        cache=cache or (planned.cache if planned else "flushed"),
    )


def _search(specs: tuple[str, ...], extra_levels: int) -> SloSearch | None:
    """`--slo-search p90_ttft_ms=2000 ...` as the plan's search (None: none given)."""
    if not specs:
        return None
    limits: dict[str, float] = {}
    for spec in specs:
        key, _, value = spec.partition("=")
        try:
            limits[key.strip()] = float(value)
        except ValueError:
            limits[key.strip()] = float("nan")
    try:
        check_limits(limits, "--slo-search")
    except ValueError as err:
        raise ReproError(
            str(err), hint="e.g. --slo-search p90_ttft_ms=2000 --slo-search p90_tpot_ms=50"
        ) from None
    return SloSearch(limits=limits, extra_levels=extra_levels)


def recipe_target(ref: str) -> BenchTarget:
    """The recipe `ref` names, with the lock `repro launch` runs when a current one is there
    (a lock file's own lock when `ref` names one): what the server is checked against."""
    return BenchTarget.from_locked(load_locked(ref, lock="attach"), ref)


def bench_number(value: Any, digits: int = 1) -> str:
    """`digits` decimals; from 1000 up none, as report and compare print them (5178)."""
    if value is None:
        return "-"
    return f"{value:.{0 if abs(value) >= 1000 else digits}f}"


def _verdict(level: Level) -> Text:
    if level.valid:
        return Text("yes", style="green")
    return Text("NO: " + clean("; ".join(level.reasons)), style="bold red")


def summary_table(levels: list[Level], forced: ForcedAcceptance | None = None) -> Table:
    """One row per level; ITL is per token (bench_serving's), chunk the gap between stream
    chunks (a verify step on a speculative server), accept the pooled tokens per verify step
    (titled `forced` when SGLANG_SIMULATE_ACC_LEN set it); open-loop levels add the rate
    offered and sent and how late the sends were."""
    table = Table(title="bench" + (f" (acceptance {forced.label()})" if forced else ""))
    for col in ("level", "rep", "ok", "fail", "req/s", "out tok/s", "tok/s/user",
                "TTFT p50 ms", "ITL p50 ms", "chunk p50 ms", "TPOT p50 ms", "E2E p99 ms",
                "accept", "steps/s"):  # fmt: skip
        table.add_column(col, justify="right")
    goodput = any(lv.goodput is not None for lv in levels)
    arrivals = any(lv.arrival is not None for lv in levels)
    if arrivals:
        for col in ("offered/s", "sent/s", "late p99 ms"):
            table.add_column(col, justify="right")
    energy = _energy_headers(table, levels)
    table.add_column("valid", justify="left")
    if goodput:
        table.add_column("goodput req/s", justify="right")
    for lv in levels:
        table.add_row(
            lv.load.label,
            str(lv.repeat),
            str(lv.completed),
            str(lv.failed),
            bench_number(lv.request_throughput, 2),
            bench_number(lv.output_throughput),
            bench_number(lv.output_throughput_per_user),
            bench_number(lv.median_ttft_ms),
            bench_number(lv.median_itl_ms, 2),
            bench_number(lv.median_chunk_gap_ms, 2),
            bench_number(lv.median_tpot_ms, 2),
            bench_number(lv.p99_e2e_latency_ms),
            bench_number(lv.accept_length, 2),
            bench_number(lv.verify_steps_per_s, 0),
            *(_arrival_cells(lv) if arrivals else []),
            *_energy_cells(lv, energy),
            _verdict(lv),
            *([bench_number(lv.goodput, 2)] if goodput else []),
        )
    return table


def _arrival_cells(lv: Level) -> list[str]:
    """An open-loop level's schedule as kept: the rate offered, the rate sent, how late."""
    arrival = lv.arrival
    if arrival is None:
        return ["-", "-", "-"]
    return [
        bench_number(arrival.offered_rate, 2),
        bench_number(arrival.achieved_rate, 2),
        bench_number(arrival.send_lag_p99_ms, 1),
    ]


def length_table(levels: list[Level]) -> Table | None:
    """Levels by context-length bucket (of the server's prompt_tokens); None without any."""
    bucketed = [lv for lv in levels if lv.by_length]
    if not bucketed:
        return None
    table = Table(title="by context length (the server's prompt_tokens; k = 1024)")
    for col in ("level", "bucket", "ok", "prompt", "TTFT p50 ms", "TPOT p50 ms", "accept"):
        table.add_column(col, justify="left" if col in ("level", "bucket") else "right")
    for lv in bucketed:
        for b in lv.by_length or []:
            table.add_row(
                f"c{lv.concurrency}-r{lv.repeat}", b.bucket, str(b.requests),
                bench_number(b.mean_prompt_tokens, 0), bench_number(b.median_ttft_ms),
                bench_number(b.median_tpot_ms, 2), bench_number(b.accept_length, 2),
            )  # fmt: skip
    return table


def turns_table(levels: list[Level]) -> Table | None:
    """Multi-turn levels by turn: the server's prompt and cached tokens (mean per request)
    and the share cached, with the cache state each level started from; None without any."""
    talks = [lv for lv in levels if lv.conversation is not None]
    if not talks:
        return None
    table = Table(
        title="conversations by turn: the server's prompt and cached tokens (mean)",
        caption="level c<concurrency>-r<repeat>, from a flushed or a warm cache; "
        "%: cached / prompt tokens",
    )
    for col in ("level", "cache", "turn", "n", "prompt", "cached", "%", "TTFT p50 ms"):
        table.add_column(col, justify="left" if col in ("level", "cache") else "right")
    for lv in talks:
        talk = lv.conversation
        assert talk is not None
        for turn in talk.by_turn:
            table.add_row(
                f"c{lv.concurrency}-r{lv.repeat}", talk.cache, str(turn.turn),
                str(turn.requests), bench_number(turn.mean_prompt_tokens),
                bench_number(turn.mean_cached_tokens), bench_number(turn.cache_hit_rate * 100),
                bench_number(turn.median_ttft_ms),
            )  # fmt: skip
    return table


def _energy_headers(table: Table, levels: list[Level]) -> bool:
    """Energy and cost columns when any level has them, headed `(sim)` for the simulator's
    power model; False when none has."""
    sources = {lv.energy.source for lv in levels if lv.energy and lv.energy.energy_j is not None}
    priced = any(lv.usd_per_mtok is not None for lv in levels)
    if not sources and not priced:
        return False
    tag = " (sim)" if sources == {"simulated"} else ""
    for col in (f"J/tok{tag}", f"W{tag}", "$/Mtok"):
        table.add_column(col, justify="right")
    return True


def _energy_cells(lv: Level, shown: bool) -> list[str]:
    if not shown:
        return []
    return [
        bench_number(lv.joules_per_output_token, 3),
        bench_number(lv.mean_power_w, 0),
        bench_number(lv.usd_per_mtok, 3),
    ]


@click.command("bench")
@click.argument("recipe", required=False)
@click.option(
    "--url",
    help="Server URL (default: http://127.0.0.1:<recipe server.port>); alone, without a "
    "RECIPE, the server to measure.",
)
@click.option(
    "--concurrency",
    "concurrency",
    help="Closed-loop levels, comma-separated, e.g. 1,2,4,8: each keeps that many requests "
    "in flight, sending the next as one finishes.",
)
@click.option(
    "--request-rate",
    "request_rate",
    metavar="RATES",
    help="Open-loop levels instead: request rates in req/s, comma-separated, e.g. 2,4,8. "
    "Requests are sent at random times at that mean rate whether or not earlier ones "
    "finished, as independent users arrive (queueing shows in TTFT). The record keeps each "
    "request's offered and actual send time, and the achieved rate; a level that sent "
    "behind its schedule is invalid.",
)
@click.option(
    "--burstiness",
    type=FiniteFloat(min=0, min_open=True, max=1000),
    metavar="B",
    help="Gamma shape of the gaps between a rate level's requests, as bench_serving and "
    "vLLM: 1 is a Poisson process, 0.5 burstier (bursts and lulls at the same mean rate), "
    "above 1 steadier [default: 1, or the recipe's bench.burstiness].",
)
@click.option(
    "--max-concurrency",
    type=field_range(Bench, "max_concurrency"),
    help="Cap on requests in flight in an open-loop level (rates, trace); a request over "
    "the cap waits and is sent late [default: no cap].",
)
@click.option(
    "--trace",
    metavar="TRACE",
    help="Replay a Mooncake-format trace at its timestamps instead: demo (a 48-request "
    "trace repro ships), a JSONL file, or hf:ORG/NAME/FILE.jsonl. Each line's input_length, "
    "output_length and hash_ids (512-token blocks) shape the prompt: requests naming the "
    "same block share a real token prefix. --prompts caps the requests replayed.",
)
@click.option(
    "--trace-speedup",
    metavar="SPEEDUPS",
    help="Replay speed-ups, comma-separated, one level each: 2 sends the trace in half its "
    "time [default: 1].",
)
@click.option(
    "--input-len",
    type=field_range(Bench, "input_len"),
    help="Prompt length (tokens) of the random and chat datasets.",
)
@click.option(
    "--output-len",
    type=field_range(Bench, "output_len"),
    help="Output length (tokens) of every request, whatever the dataset.",
)
@click.option(
    "--dataset",
    metavar="DATASET",
    help="Prompts, overriding the recipe's bench.dataset: random, chat, sharegpt (SGLang "
    "bench_serving's ShareGPT file, fetched from the Hub once), longbench-v2 (LongBench-v2's "
    "real documents, 8k to 2M words, sent whole), a .jsonl/.json/.csv/.parquet "
    "file, or a Hub dataset hf:ORG/NAME[/PATH][@REVISION][:COLUMN], e.g. "
    "--dataset hf:openai/gsm8k/main:question. Dataset prompts are sent as they are "
    "(chat-formatted); the record keeps the file's sha256 or the Hub commit SHA.",
)
@click.option(
    "--prompts-per-level",
    "--prompts",
    "prompts",
    type=field_range(Bench, "prompts_per_level"),
    help="Measured requests per level (a count, the recipe's bench.prompts_per_level; "
    "`accept --prompts` is per prompt set).",
)
@click.option(
    "--prompts-per-concurrency",
    type=field_range(Bench, "prompts_per_concurrency"),
    help=f"Scale each concurrency level's requests with it: the level at c measures "
    f"max({MIN_LEVEL_PROMPTS}, N x c), at most --prompts (the recipe's "
    "bench.prompts_per_concurrency).",
)
@click.option(
    "--endpoint",
    type=click.Choice(["generate", "chat"]),
    default="generate",
    show_default=True,
    help="SGLang's native /generate or /v1/chat/completions (both report speculative stats).",
)
@click.option(
    "--turns",
    type=click.IntRange(2, MAX_TURNS),
    help="Multi-turn conversations of N user turns instead of single prompts: each turn "
    "carries the history with the server's earlier answers, so later turns share a prefix "
    "the radix cache can serve. A dataset of dialogues (sharegpt, a conversations or "
    "messages column) sends its own user turns (up to N); any other dataset sends "
    "synthetic ones after a system prompt of --input-len words that every conversation "
    "shares. --prompts then counts conversations; the summary gives cached_tokens by turn.",
)
@click.option(
    "--cache",
    type=click.Choice(CACHE_STATES),
    help="The radix cache each multi-turn level starts from: flushed (/flush_cache after "
    "the warm-up, so the first turns find nothing cached) or warm (as earlier levels left "
    "it) [default: flushed].",
)
@click.option(
    "--length-buckets",
    metavar="EDGES",
    help="Context-length buckets in tokens (k: 1024), e.g. 0-8k,8k-32k,32k-: only the "
    "dataset's prompts that fall in one are sent (estimated at 4 characters a token; a "
    "bucket list that ends at the server's context keeps longer documents out), taken from "
    "each bucket in turn, and each level reports TTFT, TPOT and acceptance by bucket of the "
    "server's prompt_tokens. For long documents: --dataset longbench-v2.",
)
@click.option("--slo", "slo", multiple=True, metavar="KEY=MS",
              help="Goodput SLO, repeatable: ttft_ms=500, tpot_ms=50, e2e_ms=...")  # fmt: skip
@click.option("--slo-search", "slo_search", multiple=True, metavar="KEY=MS",
              help="After the ladder, bisect between the highest level meeting these limits "
              "and the lowest failing, repeatable: p90_ttft_ms=2000 (keys: Level's "
              "mean/median/p90/p99 *_ms).")  # fmt: skip
@click.option("--search-levels", type=click.IntRange(1, 16), default=3, show_default=True,
              help="Levels --slo-search may add at most.")  # fmt: skip
@click.option("--max-failed-pct", type=FiniteFloat(min=0, max=100),
              help="A level with more failed requests (percent) is invalid [default: 1, or "
              "the resumed run's own].")  # fmt: skip
@click.option("--metrics-interval", type=FiniteFloat(min=0.01), default=0.5,
              show_default=True, help="Seconds between the server's /metrics scrapes.")  # fmt: skip
@click.option("--gpu-hour-usd", type=FiniteFloat(min=0, min_open=True),
              help="Price of one GPU-hour in USD, for $/Mtok per level [default: the "
              "recipe's cost.gpu_hour_usd].")  # fmt: skip
@measure_options
@forced_acceptance_option()
@json_option("the summary")
def bench(
    recipe: str | None,
    url: str | None,
    concurrency: str | None,
    request_rate: str | None,
    burstiness: float | None,
    max_concurrency: int | None,
    trace: str | None,
    trace_speedup: str | None,
    input_len: int | None,
    output_len: int | None,
    dataset: str | None,
    prompts: int | None,
    prompts_per_concurrency: int | None,
    endpoint: str,
    slo: tuple[str, ...],
    slo_search: tuple[str, ...],
    search_levels: int,
    max_failed_pct: float | None,
    metrics_interval: float,
    gpu_hour_usd: float | None,
    turns: int | None,
    cache: CacheState | None,
    length_buckets: str | None,
    forced: ForcedAcceptance | None,
    as_json: bool,
    **shared: Any,
) -> None:
    """Sweep levels against RECIPE's server and write a run record.

    A level is a closed loop at a concurrency (--concurrency, the default), an open loop at
    a request rate (--request-rate 2,4,8 --burstiness 0.5) or a trace replayed at its
    timestamps (--trace demo --trace-speedup 1,2); tables head them c=4, r=4/s, trace 2x.

    Without a RECIPE, `--url URL` alone measures that server with the default plan (the
    options below override it), recorded under the server's host:port.

    Prints a summary table on stderr and the run folder on stdout (or, with --json, the
    summary). Every level gets a validity verdict (valid, or the reasons it is not: no
    output, failed requests, concurrency above the server's running-request cap, the server
    not running the offered load, acceptance disagreeing with the server's, a saturated
    client, an open-loop level sent behind its schedule). With --resume RUN, valid levels
    are kept; invalid and missing ones run.
    """
    resume = shared["resume"]
    if recipe is None and resume is None and url is None:
        raise ReproError(
            "give a RECIPE, a server --url, or --resume RUN",
            hint="e.g. repro bench demo, or repro bench --url http://127.0.0.1:30000",
        )
    ctx = click.get_current_context()
    if resume is not None:
        given = given_options(
            ctx, "concurrency", "request_rate", "burstiness", "max_concurrency", "trace",
            "trace_speedup", "input_len", "output_len", "prompts", "prompts_per_concurrency",
            "endpoint", "output",
            "turns", "cache", "length_buckets",
        )  # fmt: skip
        refuse_with(
            ctx,
            ([recipe] if recipe else []) + given,
            "cannot be combined with --resume: a resumed run measures its own recorded plan "
            "(resume without them, or start a new run)",
        )
    for first, *others in (("concurrency", "request_rate", "trace"), ("request_rate", "trace")):
        if given_options(ctx, first):
            refuse_with(
                ctx, given_options(ctx, *others),
                f"cannot be combined with --{first.replace('_', '-')}: a level is one of a "
                "concurrency, a request rate or a trace",
            )  # fmt: skip
    if given_options(ctx, "slo_search"):
        refuse_with(
            ctx, given_options(ctx, "request_rate", "trace"),
            "cannot be combined with --slo-search: the search bisects concurrencies",
        )  # fmt: skip
    if url is not None:
        [url] = server_urls([url], warn)
    target = None
    if recipe is not None:
        target = recipe_target(recipe)
        url = url or target_url(target)
    elif resume is None and url is not None:
        target = BenchTarget.from_url(url)  # no recipe: the default plan, named after the server
    opts = BenchOptions(
        url=url,
        concurrencies=_levels(concurrency),
        request_rates=_rates(request_rate, "--request-rate", "2,4,8"),
        burstiness=burstiness,
        max_concurrency=max_concurrency,
        trace=trace,
        trace_speedups=_rates(trace_speedup, "--trace-speedup", "1,2,4"),
        input_len=input_len,
        output_len=output_len,
        dataset=dataset,
        prompts=prompts,
        prompts_per_concurrency=prompts_per_concurrency,
        endpoint="chat" if endpoint == "chat" else "generate",
        slos=parse_slos(slo),
        slo_search=_search(slo_search, search_levels),
        max_failed_pct=max_failed_pct,
        metrics_interval=metrics_interval,
        gpu_hour_usd=gpu_hour_usd,
        conversation=_conversation(turns, cache, target.bench if target else None),
        length_buckets=(
            parse_buckets(length_buckets, "--length-buckets") if length_buckets else None
        ),
        forced=forced,
        provenance=local_provenance([url] if url else [], machine=resume is None),
        **shared,
    )
    with sweep_bars(_console) as bars:
        result = run_bench(target, opts, bars)
    if result.error:  # the server's own account of the failure, when repro launched it
        folder = RunFolder(result.run_dir)
        keep_server_log(folder, folder.read_run().recipe_name)
    _console.print(fit(summary_table(result.levels, result.forced)))
    by_length = length_table(result.levels)
    if by_length is not None:
        _console.print(fit(by_length))
    by_turn = turns_table(result.levels)
    if by_turn is not None:
        _console.print(fit(by_turn))
    if result.bench is not None and result.bench.slo_search is not None:
        search = search_summary(result.levels, result.bench.slo_search, result.bench.concurrencies)
        _console.print(search)
    if as_json:
        doc = {"run_dir": str(result.run_dir), "status": result.status, "error": result.error}
        levels = [lv.model_dump(mode="json") for lv in result.levels]
        click.echo(strict_json({**doc, "levels": levels}, indent=2))
    else:
        click.echo(str(result.run_dir))
    if result.error:
        raise ReproError(
            f"the run failed: {result.error}",
            hint=f"finished levels are kept in {result.run_dir}; fix the server, then "
            f"`repro bench --resume {result.run_dir}`",
        )
