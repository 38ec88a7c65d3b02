"""Bench and accept: a streaming load generator for SGLang, per-level metrics, run records.

Public API:

    BenchTarget.from_locked(locked) / .from_url(url)   # what is measured, lock included
    run_bench(target, BenchOptions(...), progress=None) -> BenchResult  # `repro bench`
    run_accept(targets, AcceptOptions(...)) -> list[AcceptResult]      # `repro accept`
    StreamClient(url, endpoint).run(bodies, concurrency, ...) -> LevelRun
    ServerSession(url)   # every other call to a server: info, flush, metrics, sim, generate
    summarize_level(results, concurrency=, repeat=, duration=, gpus=, slos=) -> Level
    parse_slos(["ttft_ms=500", "tpot_ms=50"]) -> {"ttft": 500.0, "tpot": 50.0}   # --slo
    load_prompt_set(ref) -> PromptSet   # math|code|chat, a data file, hf:ORG/NAME[...]
    chat_template_for(repo, revision, fallback=, simulated=) -> ChatTemplate   # pinned commit
"""

from repro.bench.client.result import RequestResult
from repro.bench.client.stream import LevelRun, StreamClient
from repro.bench.metrics import accept_length, parse_slos, spread, summarize_level
from repro.bench.options import AcceptOptions, BenchOptions, MeasureOptions
from repro.bench.prompts.chattemplate import ChatTemplate, chat_template_for
from repro.bench.prompts.sets import PromptSet, load_prompt_set
from repro.bench.record import RunWriter
from repro.bench.session import ServerSession
from repro.bench.sweep import BenchResult, run_bench
from repro.bench.target import BenchTarget

__all__ = [
    "AcceptOptions",
    "BenchOptions",
    "BenchResult",
    "BenchTarget",
    "ChatTemplate",
    "LevelRun",
    "MeasureOptions",
    "PromptSet",
    "RequestResult",
    "RunWriter",
    "ServerSession",
    "StreamClient",
    "accept_length",
    "chat_template_for",
    "load_prompt_set",
    "parse_slos",
    "run_bench",
    "spread",
    "summarize_level",
]
