"""`repro accept RECIPE...`: acceptance length per prompt set, drafters side by side."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from repro.bench.accept import AcceptOptions, AcceptResult, run_accept
from repro.recipe import load_recipe

_console = Console(stderr=True, highlight=False)


def accept_table(results: list[AcceptResult]) -> Table:
    table = Table(title="acceptance length (sum completion_tokens / sum spec_verify_ct)")
    table.add_column("prompt set")
    for r in results:
        mark = " (simulated)" if r.simulated else ""
        table.add_column(f"{r.recipe_name}{mark}", justify="right")
    names = list(dict.fromkeys(s.prompt_set for r in results for s in r.sets))
    for name in names:
        row = [name]
        for r in results:
            found = next((s for s in r.sets if s.prompt_set == name), None)
            value = found.accept_length if found else None
            row.append(
                "-" if found is None or value is None else f"{value:.2f}  (n={found.prompts})"
            )
        table.add_row(*row)
    return table


@click.command("accept")
@click.argument("recipes", nargs=-1, required=True)
@click.option("--url", "urls", multiple=True, help="Server URL, once per recipe (in order).")
@click.option(
    "--prompts",
    "prompt_sets",
    help="Comma-separated prompt sets: math, code, chat, .jsonl/.json/.csv/.parquet files, or "
    "Hub datasets hf:ORG/NAME[/PATH][@REVISION][:COLUMN] (default column: the first of prompt, "
    "text, question, instruction, problem), e.g. --prompts math,hf:openai/gsm8k/main:question. "
    "A comma always separates two sets (names, paths and columns hold none).",
)
@click.option("-n", "--num-prompts", type=click.IntRange(min=1), help="Prompts per set.")
@click.option("--max-new-tokens", type=click.IntRange(min=1), help="Tokens per prompt.")
@click.option("--thinking/--no-thinking", default=None, help="Chat template thinking switch.")
@click.option("--concurrency", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--output", type=click.Path(path_type=Path), help="Run folder (or a bench run).")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout.")
def accept(
    recipes: tuple[str, ...],
    urls: tuple[str, ...],
    prompt_sets: str | None,
    num_prompts: int | None,
    max_new_tokens: int | None,
    thinking: bool | None,
    concurrency: int,
    output: Path | None,
    as_json: bool,
) -> None:
    """Measure each RECIPE's acceptance length per prompt set (temperature 0, after
    /flush_cache, chat-formatted prompts) and print them side by side.

    Writes accept.json into a run folder per recipe and prints the folders on stdout.
    """
    loaded = [load_recipe(ref) for ref in recipes]
    opts = AcceptOptions(
        urls=list(urls),
        prompt_sets=[s.strip() for s in prompt_sets.split(",") if s.strip()]
        if prompt_sets
        else None,
        prompts=num_prompts,
        max_new_tokens=max_new_tokens,
        thinking=thinking,
        concurrency=concurrency,
        output=output,
    )
    with _console.status("measuring acceptance"):
        results = run_accept(loaded, opts)
    _console.print(accept_table(results))
    if as_json:
        doc = [
            {"recipe": r.recipe_name, "run_dir": str(r.run_dir), "simulated": r.simulated,
             "algorithm": r.algorithm, "sets": [s.model_dump(mode="json") for s in r.sets]}
            for r in results
        ]  # fmt: skip
        click.echo(json.dumps(doc, indent=2))
    else:
        for r in results:
            click.echo(str(r.run_dir))
