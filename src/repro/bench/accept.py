"""`repro accept`: the drafter's acceptance length per prompt set, measured per request.

For each recipe: check the server is SGLang and speculative, `/flush_cache`, then send each
prompt set's chat-formatted prompts (the model's chat template, else the built-in ChatML one)
at low concurrency and temperature 0 to `/generate`, and read `completion_tokens` and
`spec_verify_ct` from each request's finished `meta_info` (tokenizer_manager.py). A set's
acceptance length is sum(completion_tokens) / sum(spec_verify_ct): never the server's
cumulative `avg_spec_accept_length`.

Prompt sets are shipped sets, data files or Hub datasets (repro.bench.datasets); each set's
result records its source (for a Hub dataset, the commit SHA and files read).

The results go to `accept.json` in a run folder: a new `runs/<UTC>-<recipe>-accept/` (with
run.json, recipe.json, server_info.json, machine.json and an empty summary.json), or an
existing bench run given as `output`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro.bench.client import RequestResult, StreamClient, measure
from repro.bench.datasets import PromptSet
from repro.bench.metrics import accept_length
from repro.bench.prompts import chat_template_for, load_prompt_set, take
from repro.bench.record import new_run_dir, utc_now, write_json, write_model
from repro.bench.server import fetch_server_info, flush_cache, is_simulated, speculative_algorithm
from repro.bench.wire import generate_body
from repro.errors import ReproError
from repro.lock import lock_of
from repro.spec.record import (
    AcceptResults,
    AcceptRunInfo,
    AcceptSet,
    AcceptWorkload,
    ServerInfo,
    Summary,
)
from repro.topology import collect_fingerprint


@dataclass
class AcceptOptions:
    urls: list[str] = field(default_factory=list)  # one per recipe, in order; else the port
    prompt_sets: list[str] | None = None  # default: recipe.accept.prompt_sets
    prompts: int | None = None
    max_new_tokens: int | None = None
    thinking: bool | None = None
    concurrency: int = 4
    temperature: float = 0.0
    output: Path | None = None
    runs_dir: Path = Path("runs")
    read_timeout: float = 300.0
    collect_machine: bool = True


@dataclass
class AcceptResult:
    recipe_name: str
    run_dir: Path
    simulated: bool
    algorithm: str | None
    sets: list[AcceptSet]


def _set_result(prompt_set: PromptSet, results: list[RequestResult]) -> AcceptSet:
    ok = [r for r in results if r.ok]
    return AcceptSet(
        prompt_set=prompt_set.name,
        prompts=len(ok),
        failed=len(results) - len(ok),
        completion_tokens=sum(r.completion_tokens for r in ok if r.spec_verify_ct),
        spec_verify_ct=sum(r.spec_verify_ct or 0 for r in ok),
        accept_length=accept_length(ok),
        accept_length_per_prompt=[
            r.completion_tokens / r.spec_verify_ct if r.ok and r.spec_verify_ct else None
            for r in results
        ],
        source=prompt_set.source,  # what ran: a Hub commit SHA, a file's sha256
    )


async def _measure(
    url: str, bodies_by_set: list[tuple[PromptSet, list[bytes]]], opts: AcceptOptions
) -> list[AcceptSet]:
    await flush_cache(url)
    sets = []
    async with StreamClient(url, "generate", read_timeout=opts.read_timeout) as client:
        for prompt_set, bodies in bodies_by_set:
            name = prompt_set.name
            run = await client.run(bodies, opts.concurrency)
            ok = [r for r in run.results if r.ok]
            if not ok:
                first = next((r for r in run.results if r.error), None)
                raise ReproError(
                    f"every request of prompt set {name!r} failed at {url}"
                    + (f" ({first.error_kind}: {first.error})" if first else ""),
                    hint="check the server (repro status / logs) and try again",
                )
            if all(r.spec_verify_ct is None for r in ok):
                raise ReproError(
                    f"the server at {url} is not speculative: its responses carry no "
                    "spec_verify_ct",
                    hint="launch a recipe with a drafter (speculative: algorithm DFLASH, ...); "
                    "acceptance length only exists with speculative decoding",
                )
            sets.append(_set_result(prompt_set, run.results))
    return sets


def accept_one(recipe: Any, url: str, opts: AcceptOptions) -> AcceptResult:
    plan = recipe.accept
    set_refs = opts.prompt_sets or (plan.prompt_sets if plan else ["math", "code", "chat"])
    count = opts.prompts or (plan.prompts if plan else 32)
    max_new = opts.max_new_tokens or (plan.max_new_tokens if plan else 512)
    thinking = opts.thinking if opts.thinking is not None else (plan.thinking if plan else False)
    prompt_sets = [load_prompt_set(ref) for ref in set_refs]  # bad input fails before any I/O
    info = asyncio.run(fetch_server_info(url))
    if "speculative_algorithm" in info and speculative_algorithm(info) is None:
        raise ReproError(
            f"the server at {url} runs without speculative decoding "
            "(speculative_algorithm is null)",
            hint="launch a recipe with a drafter; acceptance length needs speculative decoding",
        )
    template = chat_template_for(recipe.model.repo, recipe.model.revision)
    bodies = [
        (
            ps,
            [
                generate_body(
                    template.render(p, thinking=thinking),
                    max_new,
                    temperature=opts.temperature,
                    ignore_eos=False,
                )
                for p in take(ps.prompts, count)
            ],
        )
        for ps in prompt_sets
    ]
    started = utc_now()
    sets = measure(_measure(url, bodies, opts))
    simulated = recipe.simulator is not None or is_simulated(info)
    run_dir = _run_dir(recipe, opts, url, info, simulated, started, template.origin)
    write_model(run_dir / "accept.json", AcceptResults(simulated=simulated, sets=sets))
    return AcceptResult(recipe.name, run_dir, simulated, speculative_algorithm(info), sets)


def _run_dir(
    recipe: Any,
    opts: AcceptOptions,
    url: str,
    info: dict[str, Any],
    simulated: bool,
    started: str,
    template_origin: str,
) -> Path:
    out = opts.output
    if out is not None and (out / "run.json").is_file():
        return out  # add accept.json to an existing run
    run_dir = new_run_dir(f"{recipe.name}-accept", out, opts.runs_dir)
    plan = recipe.accept.model_dump(mode="json") if recipe.accept else None
    run = AcceptRunInfo(
        run_id=run_dir.name,
        recipe_name=recipe.name,
        status="complete",
        simulated=simulated,
        started_at=started,
        finished_at=utc_now(),
        server_url=url,
        endpoint="generate",
        workload=AcceptWorkload(accept=plan, chat_template=template_origin),
    )
    write_model(run_dir / "run.json", run)
    write_json(run_dir / "recipe.json", recipe.model_dump(mode="json"))
    lock = lock_of(recipe)
    if lock is not None:
        write_json(run_dir / "lock.json", lock.model_dump(mode="json"))
    server_info = ServerInfo.model_validate({**info, "simulated": simulated})
    write_model(run_dir / "server_info.json", server_info, exclude_unset=True)
    write_model(run_dir / "summary.json", Summary(levels=[]), exclude_unset=True)  # no spread
    if opts.collect_machine:
        write_json(run_dir / "machine.json", collect_fingerprint().model_dump(mode="json"))
    return run_dir


def run_accept(recipes: list[Any], opts: AcceptOptions) -> list[AcceptResult]:
    """Acceptance per prompt set for each recipe (side by side when several)."""
    if opts.urls and len(opts.urls) != len(recipes):
        raise ReproError(
            f"{len(opts.urls)} --url for {len(recipes)} recipes",
            hint="give one --url per recipe, in the same order, or none",
        )
    if opts.output is not None and len(recipes) > 1:
        raise ReproError("--output takes one recipe", hint="omit --output with several recipes")
    out = []
    for i, recipe in enumerate(recipes):
        url = (opts.urls[i] if opts.urls else f"http://127.0.0.1:{recipe.server.port}").rstrip("/")
        out.append(accept_one(recipe, url, opts))
    return out
