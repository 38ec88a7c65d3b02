"""Pipeline-parallel gauges: every PP stage's scheduler reports its own (label pp_rank,
srt/observability/metrics_collector.py), each running the micro-batch it ran last
(scheduler_pp_mixin.py), so a PP8 server's running requests are the stages' sum."""

from __future__ import annotations

import pytest

from repro.bench.serverstate import parse_metrics


def _page(stages: int, running: list[int], queued: list[int], tp: int = 2) -> str:
    """A /metrics page shaped as SGLang 0.5.23 writes it: one series per TP rank and stage."""
    lines = [
        "# HELP sglang:num_running_reqs The number of running requests.",
        "# TYPE sglang:num_running_reqs gauge",
    ]
    for name, values in (("num_running_reqs", running), ("num_queue_reqs", queued)):
        if name != "num_running_reqs":
            lines += [f"# HELP sglang:{name} x.", f"# TYPE sglang:{name} gauge"]
        for stage in range(stages):
            for tp_rank in range(tp):
                labels = (
                    f'engine_type="unified",model_name="m",moe_ep_rank="0",'
                    f'pp_rank="{stage}",tp_rank="{tp_rank}"'
                )
                lines.append(f"sglang:{name}{{{labels}}} {float(values[stage])}")
    return "\n".join(lines) + "\n"


def test_running_requests_add_up_over_pipeline_stages() -> None:
    sample = parse_metrics(_page(4, running=[16, 16, 16, 15], queued=[3, 3, 2, 3]), 0.0)
    assert sample.num_running_reqs == pytest.approx(63)  # not stage 0's 16
    assert sample.num_queue_reqs == pytest.approx(3)  # the same queue, seen by each stage


def test_without_pipeline_stages_one_tp_rank_counts() -> None:
    sample = parse_metrics(_page(1, running=[40], queued=[5], tp=8), 0.0)
    assert sample.num_running_reqs == pytest.approx(40)
    assert sample.num_queue_reqs == pytest.approx(5)
