"""Prometheus text exposition of SGLang's `sglang:` metrics, without prometheus_client.

Names, label sets, bucket bounds and help texts mirror
sglang/srt/observability/metrics_collector.py (SchedulerMetricsCollector: gauges labelled
model_name, engine_type, tp_rank, pp_rank, moe_ep_rank [, dp_rank]; TokenizerMetricsCollector:
counters and histograms labelled model_name, engine_type [, is_streaming]). Counters are
written as prometheus_client writes them (`# TYPE x_total counter`). A `repro_sim_info`
gauge says the numbers are simulated and by which profile.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Any

# mirrors TokenizerMetricsCollector default buckets
TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
E2E_BUCKETS = (*TTFT_BUCKETS, 600, 1200, 1800, 2400)
ITL_BUCKETS = (
    0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060,
    0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000,
)  # fmt: skip
# mirrors SchedulerMetricsCollector queue_time_seconds buckets
QUEUE_BUCKETS = (0.0, 0.001, 0.005, 0.01, 0.05, 0.1, 0.2, 0.5, 1, 2, 3, 4, 5, 10, 20, 30, 60)


class Histogram:
    __slots__ = ("bounds", "count", "counts", "sum")

    def __init__(self, bounds: Iterable[float]) -> None:
        self.bounds = tuple(float(b) for b in bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float, times: int = 1) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += times
        self.count += times
        self.sum += value * times


def _fmt(value: float) -> str:
    if value == float("inf"):
        return "+Inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{float(value):.1f}"
    return repr(float(value))


def _labels(labels: dict[str, Any]) -> str:
    if not labels:
        return ""
    inner = ",".join(
        f'{k}="{str(v).replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        for k, v in labels.items()
    )
    return "{" + inner + "}"


class Exposition:
    """Collects families and renders them as text/plain; version=0.0.4."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def gauge(self, name: str, doc: str, samples: list[tuple[dict[str, Any], float]]) -> None:
        self.lines += [f"# HELP {name} {doc}", f"# TYPE {name} gauge"]
        self.lines += [f"{name}{_labels(lab)} {_fmt(v)}" for lab, v in samples]

    def counter(self, name: str, doc: str, samples: list[tuple[dict[str, Any], float]]) -> None:
        self.lines += [f"# HELP {name} {doc}", f"# TYPE {name} counter"]
        self.lines += [f"{name}{_labels(lab)} {_fmt(v)}" for lab, v in samples]

    def histogram(
        self, name: str, doc: str, samples: list[tuple[dict[str, Any], Histogram]]
    ) -> None:
        self.lines += [f"# HELP {name} {doc}", f"# TYPE {name} histogram"]
        for lab, hist in samples:
            running = 0
            for bound, count in zip((*hist.bounds, float("inf")), hist.counts, strict=True):
                running += count
                le = {**lab, "le": _fmt(bound)}
                self.lines.append(f"{name}_bucket{_labels(le)} {_fmt(running)}")
            self.lines.append(f"{name}_count{_labels(lab)} {_fmt(hist.count)}")
            self.lines.append(f"{name}_sum{_labels(lab)} {_fmt(hist.sum)}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


class TokenizerMetrics:
    """Per-request counters and latency histograms (TokenizerMetricsCollector's)."""

    def __init__(self) -> None:
        self.prompt_tokens = {"true": 0, "false": 0}
        self.generation_tokens = {"true": 0, "false": 0}
        self.num_requests = {"true": 0, "false": 0}
        self.spec_verify_calls = 0
        self.aborted = 0
        self.ttft = {"true": Histogram(TTFT_BUCKETS), "false": Histogram(TTFT_BUCKETS)}
        self.e2e = {"true": Histogram(E2E_BUCKETS), "false": Histogram(E2E_BUCKETS)}
        self.itl = Histogram(ITL_BUCKETS)
        self.queue = Histogram(QUEUE_BUCKETS)

    def finished(
        self,
        streaming: bool,
        prompt_tokens: int,
        completion_tokens: int,
        verify_ct: int,
        e2e: float,
    ) -> None:
        key = "true" if streaming else "false"
        self.prompt_tokens[key] += prompt_tokens
        self.generation_tokens[key] += completion_tokens
        self.num_requests[key] += 1
        self.spec_verify_calls += verify_ct
        self.e2e[key].observe(e2e)

    def render(self, out: Exposition, labels: dict[str, Any]) -> None:
        def by_stream(values: dict[str, Any]) -> list[tuple[dict[str, Any], Any]]:
            return [({**labels, "is_streaming": k}, v) for k, v in values.items()]

        out.counter(
            "sglang:prompt_tokens_total",
            "Number of prefill tokens processed.",
            by_stream(self.prompt_tokens),
        )
        out.counter(
            "sglang:generation_tokens_total",
            "Number of generation tokens processed.",
            by_stream(self.generation_tokens),
        )
        out.counter(
            "sglang:spec_verify_calls_total",
            "Number of speculative decoding verification calls.",
            [(labels, self.spec_verify_calls)],
        )
        out.counter(
            "sglang:num_requests_total",
            "Number of requests processed.",
            by_stream(self.num_requests),
        )
        out.counter(
            "sglang:num_aborted_requests_total",
            "Number of requests aborted.",
            [(labels, self.aborted)],
        )
        out.histogram(
            "sglang:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            by_stream(self.ttft),
        )
        out.histogram(
            "sglang:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.",
            [(labels, self.itl)],
        )
        out.histogram(
            "sglang:e2e_request_latency_seconds",
            "Histogram of End-to-end request latency in seconds",
            by_stream(self.e2e),
        )
