"""Server state routes: /model_info, /server_info, /flush_cache, /metrics, /health."""

from __future__ import annotations

import http.client
import json
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from .simproc import MODEL, get_json, metric_value, post_json, request


def test_model_info_says_simulated(sim: Any) -> None:
    info = get_json(sim.url + "/model_info")
    for key in ("model_path", "served_model_name", "tokenizer_path", "is_generation"):
        assert key in info
    assert info["model_path"] == info["served_model_name"] == MODEL
    assert info["is_generation"] is True and info["has_image_understanding"] is False
    assert info["architectures"] == ["Qwen3ForCausalLM"]
    assert info["simulated"] is True and info["sim_profile"] == "demo"
    assert get_json(sim.url + "/get_model_info") == info


def test_server_info_both_routes(sim: Any) -> None:
    info = get_json(sim.url + "/server_info")
    assert info["version"] == "0.5.23"
    assert info["simulated"] is True and info["sim_profile"] == "demo" and info["sim_assumptions"]
    assert info["model_path"] == MODEL and info["port"] == sim.port
    assert info["enable_metrics"] is True and info["speculative_algorithm"] is None
    assert info["launch_command"].startswith("python3 -m sglang.launch_server --model-path")
    (state,) = info["internal_states"]
    assert state["effective_max_running_requests_per_dp"] == 64
    assert state["memory_usage"]["token_capacity"] == 200000
    assert "avg_spec_accept_length" not in state
    old = get_json(sim.url + "/get_server_info")
    assert old.keys() == info.keys()


def test_flush_cache_refuses_while_running(sim: Any) -> None:
    body = {"text": "a long one", "stream": True, "sampling_params": {"max_new_tokens": 20000}}
    conn = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=10)
    conn.request("POST", "/generate", json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    assert resp.readline().startswith(b"data: ")  # it is running now
    status, _, raw = request(sim.url + "/flush_cache", method="POST")
    assert (status, raw) == (400, b"Flush cache failed.\n")
    conn.close()  # the client leaves; the request is aborted
    status, _, raw = request(sim.url + "/flush_cache?timeout=5", method="POST")
    assert status == 200 and raw.startswith(b"Cache flushed.")


def test_metrics_parse_with_prometheus_client(sim: Any) -> None:
    before = metric_value(sim.url, "sglang:num_requests_total")
    post_json(sim.url + "/generate", {"text": "count me", "sampling_params": {"max_new_tokens": 4}})
    status, headers, raw = request(sim.url + "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(raw.decode())}
    for name in (
        "sglang:num_running_reqs",
        "sglang:num_queue_reqs",
        "sglang:gen_throughput",
        "sglang:token_usage",
        "sglang:spec_accept_length",
        "sglang:time_to_first_token_seconds",
        "sglang:e2e_request_latency_seconds",
        "sglang:inter_token_latency_seconds",
        "repro_sim_info",
    ):
        assert name in families, name
    assert families["sglang:prompt_tokens"].type == "counter"
    (running,) = families["sglang:num_running_reqs"].samples
    assert running.labels == {
        "model_name": MODEL,
        "engine_type": "unified",
        "tp_rank": "0",
        "pp_rank": "0",
        "moe_ep_rank": "0",
    }
    ttft = families["sglang:time_to_first_token_seconds"]
    assert {s.labels.get("is_streaming") for s in ttft.samples} == {"true", "false"}
    assert families["repro_sim_info"].samples[0].labels["profile"] == "demo"
    assert metric_value(sim.url, "sglang:num_requests_total") == before + 1


def test_health_and_metrics_off(sim_incremental: Any) -> None:
    assert request(sim_incremental.url + "/health")[0] == 200
    assert request(sim_incremental.url + "/health_generate")[0] == 200
    assert request(sim_incremental.url + "/metrics")[0] == 404  # no --enable-metrics
    assert json.loads(request(sim_incremental.url + "/model_info")[2])["simulated"] is True
