"""The server's state during a level: its effective limits and its `/metrics` over time.

Limits come from `/server_info` (sglang/srt/entrypoints/http_server.py `server_info`: the
resolved server arguments, so a speculative server started without `--max-running-requests`
reports the 48 that srt/arg_groups/speculative_hook.py set; `internal_states[i]
.effective_max_running_requests_per_dp` from srt/managers/scheduler_components/
internal_state.py). The series is `/metrics` (with `--enable-metrics`) scraped on the
benchmark's own event loop while the level runs, read with prometheus_client's parser; the
gauge names are those of sglang/srt/observability/metrics_collector.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from collections.abc import Callable, Iterable

import aiohttp
from prometheus_client.parser import text_string_to_metric_families
from pydantic import ValidationError

from repro.bench.server import fetch_server_info
from repro.errors import ReproError
from repro.schema.machine import ServerInfo
from repro.schema.server import MetricsSample, ServerLimits, ServerState

Combine = Callable[[Iterable[float]], float]
# gauge -> (MetricsSample field, how a DP rank's pipeline stages combine, how DP ranks combine).
# Every PP stage's scheduler reports (attn_tp_rank 0 of each stage, label pp_rank:
# metrics_collector.py); its running batch is the micro-batch it ran last
# (scheduler_pp_mixin.py `running_mbs`), so the stages' running requests add up, while the
# queue, KV usage, hit rate, token rate and acceptance are each stage's view of the same
# requests (the largest queue, the mean of the others).
_GAUGES: dict[str, tuple[str, Combine, Combine]] = {
    "sglang:num_running_reqs": ("num_running_reqs", sum, sum),
    "sglang:num_queue_reqs": ("num_queue_reqs", max, sum),
    "sglang:token_usage": ("token_usage", statistics.fmean, statistics.fmean),
    "sglang:cache_hit_rate": ("cache_hit_rate", statistics.fmean, statistics.fmean),
    "sglang:gen_throughput": ("gen_throughput", statistics.fmean, sum),
    "sglang:spec_accept_length": ("spec_accept_length", statistics.fmean, statistics.fmean),
}
# only these lines reach the parser: a real server's page is mostly histograms
_PREFIXES = tuple(
    p for name in _GAUGES for p in (f"{name}{{", f"{name} ", f"# HELP {name} ", f"# TYPE {name} ")
)
_LIMIT_KEYS = (
    "max_running_requests",
    "dp_size",
    "max_total_num_tokens",
    "speculative_algorithm",
    "speculative_num_draft_tokens",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_ddtree_budget",
    "decode_log_interval",
)
_TIMEOUT = aiohttp.ClientTimeout(total=10)


def server_limits(info: ServerInfo) -> ServerLimits | None:
    """The limits in a `/server_info` document; None when it does not have their shape."""
    data = {key: value for key in _LIMIT_KEYS if (value := getattr(info, key)) is not None}
    state = info.first_state
    if state and state.effective_max_running_requests_per_dp is not None:
        data["effective_max_running_requests_per_dp"] = state.effective_max_running_requests_per_dp
    try:
        return ServerLimits.model_validate(data)
    except ValidationError:
        return None


async def fetch_limits(url: str) -> ServerLimits | None:
    """The server's limits now; None when it does not answer (a dead server fails the level
    itself, which says why)."""
    try:
        return server_limits(await fetch_server_info(url))
    except ReproError:
        return None


def parse_metrics(text: str, t_s: float) -> MetricsSample:
    """One `/metrics` page as a sample; a gauge reported per TP/EP rank counts once per PP
    stage of a DP rank (its first sample), the stages and the DP ranks combined as _GAUGES
    says."""
    wanted = "\n".join(line for line in text.splitlines() if line.startswith(_PREFIXES))
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(wanted + "\n"):
        field, across_stages, across_dp = _GAUGES[family.name]
        per_stage: dict[tuple[str, str], float] = {}
        for sample in family.samples:
            rank = (sample.labels.get("dp_rank", ""), sample.labels.get("pp_rank", ""))
            per_stage.setdefault(rank, float(sample.value))
        per_dp: dict[str, list[float]] = {}
        for (dp, _stage), value in per_stage.items():
            per_dp.setdefault(dp, []).append(value)
        if per_dp:
            values[field] = across_dp(across_stages(v) for v in per_dp.values())
    return MetricsSample(t_s=t_s, **values)


class MetricsScraper:
    """Scrapes `/metrics` every `interval` seconds from `start()` until `stop()`.

    A 404 (no `--enable-metrics`) ends the scraping with `available` False; a failed scrape
    (the server busy or gone) is skipped.
    """

    def __init__(self, url: str, interval: float) -> None:
        self.url = url.rstrip("/") + "/metrics"
        self.interval = interval
        self.samples: list[MetricsSample] = []
        self.available = False
        self._t0 = 0.0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._t0 = time.perf_counter()
        self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> list[MetricsSample]:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        return self.samples

    async def _run(self) -> None:
        async with aiohttp.ClientSession(timeout=_TIMEOUT) as session:
            while True:
                if not await self._scrape(session):
                    return
                await asyncio.sleep(self.interval)

    async def _scrape(self, session: aiohttp.ClientSession) -> bool:
        """One sample; False when the server has no /metrics."""
        try:
            async with session.get(self.url) as resp:
                if resp.status == 404:
                    return False
                if resp.status != 200:
                    return True
                text = await resp.text(errors="replace")
        except (TimeoutError, aiohttp.ClientError, OSError):
            return True
        self.available = True
        with contextlib.suppress(ValueError):
            self.samples.append(parse_metrics(text, time.perf_counter() - self._t0))
        return True


def _values(samples: list[MetricsSample], field: str) -> list[float]:
    return [v for s in samples if (v := getattr(s, field)) is not None]


def decode_refreshes(samples: list[MetricsSample]) -> int:
    """How many scrapes found the gauges freshly set by a decode step: SGLang sets them all
    together every `decode_log_interval` decode iterations, `gen_throughput` from the tokens
    of that interval (metrics_reporter.py), so a new non-zero value is a new refresh and a
    repeated one the same, possibly stale, reading."""
    seen, last = 0, None
    for value in _values(samples, "gen_throughput"):
        if value > 0 and value != last:
            seen += 1
        last = value
    return seen


def server_state(
    limits: ServerLimits | None, samples: list[MetricsSample], available: bool
) -> ServerState:
    """The summary of a level's series: mean and peak running, peak queue, server acceptance."""
    running = _values(samples, "num_running_reqs")
    queued = _values(samples, "num_queue_reqs")
    usage = _values(samples, "token_usage")
    gen = _values(samples, "gen_throughput")
    accept = [v for v in _values(samples, "spec_accept_length") if v > 0]
    return ServerState(
        limits=limits,
        metrics_available=available,
        samples=len(samples),
        mean_running=statistics.fmean(running) if running else None,
        max_running=max(running) if running else None,
        max_queued=max(queued) if queued else None,
        mean_token_usage=statistics.fmean(usage) if usage else None,
        mean_gen_throughput=statistics.fmean(gen) if gen else None,
        spec_accept_length=statistics.fmean(accept) if accept else None,
        decode_refreshes=decode_refreshes(samples),
    )
