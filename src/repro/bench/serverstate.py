"""The server's state during a level: its effective limits and its `/metrics` over time.

Limits come from `/server_info` (sglang/srt/entrypoints/http_server.py `server_info`: the
resolved server arguments, so a speculative server started without `--max-running-requests`
reports the 48 that srt/arg_groups/speculative_hook.py set; `internal_states[i]
.effective_max_running_requests_per_dp` from srt/managers/scheduler_components/
internal_state.py). The series is `/metrics` (with `--enable-metrics`) scraped through the
run's ServerSession while the level runs (a page over `METRICS.max_bytes` is skipped), its
gauge lines picked out by name and parsed with prometheus_client's parser in a worker thread,
off the event loop that stamps token arrival times; the gauge names are those of
sglang/srt/observability/metrics_collector.py. A gauge that is no finite,
non-negative number (repro.bench.plausible) drops its page and names the problem, which makes
the level invalid.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable, Iterable

from prometheus_client.parser import text_string_to_metric_families
from pydantic import ValidationError

from repro.bench.client.bounded import Refused
from repro.bench.client.tasks import stop_task
from repro.bench.plausible import gauge_problem
from repro.bench.session import ServerSession
from repro.schema.server import MetricsSample, ServerLimits, ServerState
from repro.schema.serverinfo import ServerInfo

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
# only these lines reach the parser (a real server's page is mostly histograms), found by
# bytes.find per name: half the CPU of a line-by-line filter (benchmarks/metrics_parse.py)
_KEYS = tuple(b"\n" + name.encode() for name in _GAUGES)
MAX_GAUGE_LINES = 65536
"""Gauge lines of one page at most (SGLang writes one per gauge, TP rank and PP stage)."""


class GaugeRefused(ValueError):
    """A gauge held a value no server can report."""


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


def _gauge_lines(page: bytes) -> list[bytes]:
    """The sample lines of the gauges in _GAUGES, each gauge's under a `# TYPE` line of its
    own (untyped samples would each parse as a family); ValueError past MAX_GAUGE_LINES."""
    page = b"\n" + page
    lines: list[bytes] = []
    for key in _KEYS:
        pos = page.find(key)
        if pos >= 0:
            lines.append(b"# TYPE " + key[1:] + b" gauge")
        while pos >= 0:
            end = page.find(b"\n", pos + 1)
            end = len(page) if end < 0 else end
            if page[pos + len(key) : pos + len(key) + 1] in (b"{", b" "):
                lines.append(page[pos + 1 : end])
                if len(lines) > MAX_GAUGE_LINES:
                    raise ValueError(f"a /metrics page of over {MAX_GAUGE_LINES} gauge lines")
            pos = page.find(key, end)
    return lines


def _checked(name: str, value: float) -> float:
    problem = gauge_problem(name, value)
    if problem:
        raise GaugeRefused(problem)
    return value


def parse_metrics(page: str | bytes, t_s: float) -> MetricsSample:
    """One `/metrics` page as a sample; a gauge reported per TP/EP rank counts once per PP
    stage of a DP rank (its first sample), the stages and the DP ranks combined as _GAUGES
    says. ValueError for a malformed page; GaugeRefused for an impossible gauge."""
    data = page.encode() if isinstance(page, str) else page
    wanted = b"\n".join(_gauge_lines(data)).decode("utf-8", errors="replace")
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(wanted + "\n"):
        field, across_stages, across_dp = _GAUGES[family.name]
        per_stage: dict[tuple[str, str], float] = {}
        for sample in family.samples:
            rank = (sample.labels.get("dp_rank", ""), sample.labels.get("pp_rank", ""))
            per_stage.setdefault(rank, _checked(family.name, float(sample.value)))
        per_dp: dict[str, list[float]] = {}
        for (dp, _stage), value in per_stage.items():
            per_dp.setdefault(dp, []).append(value)
        if per_dp:
            combined = across_dp(across_stages(v) for v in per_dp.values())
            values[field] = _checked(family.name, combined)
    return MetricsSample(t_s=t_s, **values)


class MetricsScraper:
    """Scrapes `/metrics` every `interval` seconds from `start()` until `stop()`.

    A 404 (no `--enable-metrics`) ends the scraping with `available` False; a failed scrape
    (the server busy or gone, the page malformed or over the bound) is skipped; a page with
    an impossible gauge is dropped and `problem` names the first.
    """

    def __init__(self, session: ServerSession, interval: float) -> None:
        self.session = session
        self.interval = interval
        self.samples: list[MetricsSample] = []
        self.available = False
        self.problem: str | None = None
        self._t0 = 0.0
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    def start(self) -> None:
        self._t0 = time.perf_counter()
        self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> list[MetricsSample]:
        """Ends the scraping. The flag ends it too where a cancel is lost (Python 3.11's
        `asyncio.wait_for` drops one that arrives as its awaitable finishes): a lost cancel
        once left `stop` waiting for ever and the bench with it."""
        if self._task is not None:
            self._stopping = True
            task, self._task = self._task, None
            await stop_task(task)
        return self.samples

    async def _run(self) -> None:
        while await self._scrape() and not self._stopping:
            await asyncio.sleep(self.interval)

    async def _scrape(self) -> bool:
        """One sample; False when the server has no /metrics."""
        try:
            page = await self.session.metrics_page()
        except (Refused, OSError, TimeoutError):
            return True
        if page is None:
            return False
        self.available = True
        t_s = time.perf_counter() - self._t0
        try:  # off the loop: a large page must not delay the token timestamps
            self.samples.append(await asyncio.to_thread(parse_metrics, page, t_s))
        except GaugeRefused as exc:
            self.problem = self.problem or str(exc)
        except ValueError:
            pass
        return True


def _values(samples: list[MetricsSample], field: str) -> list[float]:
    return [v for s in samples if (v := getattr(s, field)) is not None]


def decode_refreshes(samples: list[MetricsSample]) -> int:
    """How many scrapes found the gauges as a decode step set them. SGLang sets them together
    every `decode_log_interval` decode iterations: `gen_throughput` from that interval's
    tokens, `num_running_reqs` from the decode batch, so at least 1 (metrics_reporter.py,
    report_decode_stats). A new non-zero `gen_throughput` is a new refresh; a repeated one
    the same, possibly stale, reading. Beside 0 running it is stale too: a prefill's log has
    rewritten the running gauge since, counting the running batch without the requests it
    admits and re-exporting the last `gen_throughput` (report_prefill_stats), which at c=1
    reads 0 between every two requests."""
    seen, last = 0, None
    for sample in samples:
        value = sample.gen_throughput
        if value is None:
            continue
        if value > 0 and value != last and (sample.num_running_reqs or 0) > 0:
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
