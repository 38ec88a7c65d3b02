"""Opening a sweep's run record, new or resumed: the bench plan after CLI overrides, the
server checked to be the recipe's (identity.py), the chat template at the pinned commit, the
client's limits, and the files a run folder starts with (run.json, recipe.json, lock.json,
server_info.json, machine.json). A resumed run must find the server it started with and the
same prompts.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from repro.bench.identity import check_identity, check_same_server, found_identity, recipe_url
from repro.bench.prompts.chattemplate import ChatTemplate, recipe_template
from repro.bench.prompts.datasets import PromptSet
from repro.bench.prompts.sets import bench_source
from repro.bench.record import RunWriter
from repro.bench.server import fetch_server_info, is_simulated, served_model, server_info_record
from repro.bench.validity import DEFAULT_MAX_FAILED_PCT
from repro.errors import ReproError
from repro.runfolder import new_run_dir, read_json, utc_now, write_model
from repro.schema.dataset import HubSource, bench_dataset_problem
from repro.schema.lock import Lock
from repro.schema.machine import ServerInfo
from repro.schema.record import BenchRunInfo, BenchWorkload, ClientLimits

if TYPE_CHECKING:
    from repro.bench.sweep import BenchOptions

# `repro bench` measures without thinking, on both endpoints (the record says which switch)
BENCH_THINKING = False


def _workload(
    bench: dict[str, Any], source: PromptSet | None, template: ChatTemplate | None
) -> BenchWorkload:
    return BenchWorkload(
        input_len=bench["input_len"],
        output_len=bench["output_len"],
        dataset=bench["dataset"],
        prompts_per_level=bench["prompts_per_level"],
        warmup=bench["warmup"],
        repeats=bench["repeats"],
        request_rate=bench.get("request_rate"),
        dataset_source=source.source if source else None,
        chat_template=template.describe(BENCH_THINKING) if template else None,
    )


def _limits(opts: BenchOptions, recorded: ClientLimits | None) -> ClientLimits:
    """The client's limits: the options given, else the run's own, else the defaults."""
    given = {
        "read_timeout_s": opts.read_timeout,
        "request_timeout_s": opts.request_timeout,
        "max_event_bytes": opts.max_event_bytes,
    }
    return (recorded or ClientLimits()).model_copy(
        update={k: v for k, v in given.items() if v is not None}
    )


def _source(dataset: str) -> PromptSet | None:
    problem = bench_dataset_problem(dataset)
    if problem:
        raise ReproError(
            f"--dataset: {problem}",
            hint="e.g. --dataset chat, --dataset prompts.jsonl or "
            "--dataset hf:openai/gsm8k/main:question",
        )
    return bench_source(dataset)


Started = tuple[RunWriter, dict[str, Any], str, PromptSet | None, ChatTemplate | None]


def _needs_template(endpoint: str, source: PromptSet | None) -> bool:
    """Random words go to /generate as they are; everything else is chat-formatted (by the
    client on /generate, by the server on chat, where the template's switch is sent)."""
    return endpoint == "chat" or source is not None


def start_run(recipe: Any, opts: BenchOptions) -> Started:
    """A new run record (recipe.json holds the bench plan after CLI overrides)."""
    bench = recipe.bench.model_dump(mode="json")
    overrides = {
        "concurrencies": opts.concurrencies,
        "input_len": opts.input_len,
        "output_len": opts.output_len,
        "dataset": opts.dataset,
        "prompts_per_level": opts.prompts,
    }
    bench.update({k: v for k, v in overrides.items() if v is not None})
    if bench["prompts_per_level"] < 1 or not bench["concurrencies"]:
        raise ReproError(
            "the dataset is empty: nothing to send",
            hint="give --prompts >= 1 and at least one --concurrency level",
        )
    source = _source(bench["dataset"])  # a bad dataset fails before the server is asked
    resolved = recipe.model_dump(mode="json")
    resolved["bench"] = bench
    url = (opts.url or recipe_url(recipe, opts.provenance.deployment_port)).rstrip("/")
    info = asyncio.run(fetch_server_info(url))  # fails before any folder is made
    image = opts.provenance.running_image(url) or {}  # of a deployment repro launched there
    model = getattr(recipe, "model", None)  # None: --url alone, the server's model
    lock = opts.provenance.lock_of(recipe) if model else None
    if model is None:  # --url alone: record what answers
        identity = {"checked_against": None, "found": found_identity(info, image)}
    else:
        identity = check_identity(url, info, recipe, lock, image)
    simulated = recipe.simulator is not None or is_simulated(info)
    template = None
    if _needs_template(opts.endpoint, source):
        template = recipe_template(
            model, lock, info, simulated=simulated, fallback=opts.chat_template_fallback
        )
    server_info = server_info_record(info, **image, simulated=simulated)
    run_dir = new_run_dir(recipe.name, opts.output, opts.runs_dir)
    record = RunWriter.create(
        run_dir,
        BenchRunInfo(
            run_id=run_dir.name,
            recipe_name=recipe.name,
            status="running",
            simulated=simulated,
            started_at=utc_now(),
            server_url=url,
            endpoint=opts.endpoint,
            workload=_workload(bench, source, template),
            server_identity=identity,
            slos=opts.slos,
            max_failed_pct=(
                DEFAULT_MAX_FAILED_PCT if opts.max_failed_pct is None else opts.max_failed_pct
            ),
            gpu_hour_usd=_gpu_hour_usd(recipe, opts),
            client_limits=_limits(opts, None),
        ),
    )
    record.write("recipe.json", resolved)
    if lock is not None:
        record.write("lock.json", lock.model_dump(mode="json"))
    write_model(run_dir / "server_info.json", server_info, exclude_unset=True)
    if opts.collect_machine and opts.provenance.machine is not None:
        record.write("machine.json", opts.provenance.machine().model_dump(mode="json"))
    return record, resolved, served_model(info), source, template


def _resumed_source(record: RunWriter, dataset: str) -> PromptSet | None:
    """The prompts the run started with: a Hub dataset at its recorded commit; a file only
    when its content is unchanged."""
    recorded = record.run.workload.dataset_source
    if isinstance(recorded, HubSource):
        return bench_source(recorded.pinned)
    source = bench_source(dataset)
    if source and recorded and recorded.identity() != source.source.identity():
        raise ReproError(
            f"{dataset} changed since {record.dir} started (sha256 differs)",
            hint="restore the file, or start a new run",
        )
    return source


def _resumed_template(
    record: RunWriter, resolved: dict[str, Any], info: ServerInfo, source: PromptSet | None
) -> ChatTemplate | None:
    """The template the run started with: the same file at the same commit, the fallback
    only when the run used it (runs recorded before templates were kept may fall back)."""
    if not _needs_template(record.run.endpoint or "generate", source):
        return None
    recorded = record.run.workload.chat_template
    lock_path = record.dir / "lock.json"
    lock = Lock.model_validate(read_json(lock_path)) if lock_path.is_file() else None
    return recipe_template(
        resolved.get("model"), lock, info, simulated=record.run.simulated,
        fallback=recorded is None or recorded.fallback is not None,
    )  # fmt: skip


def resume_run(opts: BenchOptions) -> Started:
    assert opts.resume is not None
    record = RunWriter.open(opts.resume)
    resolved = read_json(opts.resume / "recipe.json")
    if opts.dataset is not None and opts.dataset != resolved["bench"]["dataset"]:
        raise ReproError(
            f"{opts.resume} measures dataset {resolved['bench']['dataset']!r}, not "
            f"{opts.dataset!r}",
            hint="resume without --dataset, or start a new run",
        )
    source = _resumed_source(record, resolved["bench"]["dataset"])
    if opts.url:
        record.run.server_url = opts.url.rstrip("/")
    recorded = record.run.slos
    if opts.slos is not None and opts.slos != recorded and record.finished():
        raise ReproError(
            f"{opts.resume} has levels measured with the SLOs {recorded}, not {opts.slos}",
            hint="resume without --slo (the run's own SLOs apply), or start a new run",
        )
    opts.slos = opts.slos or recorded
    record.run.slos = opts.slos
    if opts.max_failed_pct is not None:
        record.run.max_failed_pct = opts.max_failed_pct
    if opts.gpu_hour_usd is not None:
        record.run.gpu_hour_usd = opts.gpu_hour_usd
    record.run.client_limits = _limits(opts, record.run.client_limits)
    info = asyncio.run(fetch_server_info(record.run.server_url or ""))
    check_same_server(record.run.server_url or "", info, record.run.server_identity)
    template = _resumed_template(record, resolved, info, source)
    record.run.status, record.run.finished_at, record.run.error = "running", None, None
    record.save_run()
    return record, resolved, served_model(info), source, template


def _gpu_hour_usd(recipe: Any, opts: BenchOptions) -> float | None:
    if opts.gpu_hour_usd is not None:
        return opts.gpu_hour_usd
    cost = getattr(recipe, "cost", None)
    return cost.gpu_hour_usd if cost is not None else None
