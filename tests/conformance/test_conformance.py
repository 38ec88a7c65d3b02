"""The light simulator against SGLang 0.5.23's own front end: the same requests to both, their
answers compared by keys, kinds and meaning, and their /metrics by family, type and labels.

Every difference found must be listed in docs/conformance.md (a row's path may be a pattern,
`sim_*`; every listed row must still match a difference found), so the simulator and its
documentation cannot drift from SGLang unnoticed.
"""

from __future__ import annotations

import re
import threading
import time
from fnmatch import fnmatchcase
from typing import Any

import pytest

from tests.conformance.conftest import Pair
from tests.conformance.probes import (
    call,
    chat,
    differences,
    generate,
    metric_shape,
    shape,
    stream_parts,
)
from tests.support.simulator import REPO, Sim

pytestmark = pytest.mark.real_sglang
DOC = REPO / "docs" / "conformance.md"
# a documented difference: | `probe` | `path` | what differs | why |
_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*`([^`]+)`\s*\|\s*([^|]+?)\s*\|")
BAD_REQUESTS = {
    "error_not_json": ("/generate", None, b"{not json"),
    "error_no_prompt": ("/generate", {"sampling_params": {"max_new_tokens": 4}}, None),
    "error_negative_max_new_tokens": (
        "/generate",
        {"text": "hi", "sampling_params": {"max_new_tokens": -1}},
        None,
    ),
    "error_chat_without_messages": ("/v1/chat/completions", {"model": "default"}, None),
}


def documented() -> set[str]:
    rows = set()
    for line in DOC.read_text(encoding="utf-8").splitlines():
        match = _ROW.match(line)
        if match:
            rows.add(f"{match[1]} {match[2]}: {match[3]}")
    return rows


def probe_shapes(server: Sim) -> dict[str, dict[str, str]]:
    """Every probe's shape on one server (requests first, /metrics last)."""
    url = server.url
    shapes = {"generate": shape(call(url, "/generate", generate(False)).body)}
    for name, reply in (
        ("generate_stream", call(url, "/generate", generate(True))),
        ("chat_stream", call(url, "/v1/chat/completions", chat(False))),
        ("chat_stream_spec", call(url, "/v1/chat/completions", chat(True))),
    ):
        shapes[name] = shape(stream_parts(reply))
    for name, (path, body, raw) in BAD_REQUESTS.items():
        reply = call(url, path, body, raw)
        shapes[name] = {"status": str(reply.status), **shape(reply.body)}
    info = call(url, "/server_info").body
    states = info.pop("internal_states")
    shapes["server_info"] = {k: v for k, v in shape(info).items() if "." not in k and "[" not in k}
    shapes["internal_states"] = {
        k: v for k, v in shape(states[0]).items() if "." not in k and "[" not in k
    }
    flush = call(url, "/flush_cache")
    shapes["flush_cache"] = {"status": str(flush.status)}
    shapes["metrics"] = metric_shape(call(url, "/metrics").body)
    return shapes


def found_differences(pair: Pair) -> set[str]:
    sim, sglang = probe_shapes(pair.sim), probe_shapes(pair.sglang)
    found = set()
    for probe in sglang:
        if probe == "metrics":  # the simulator serves a subset: what it has must agree
            sim_families = sim[probe]
            for family, kind in sim_families.items():
                if family not in sglang[probe]:
                    found.add(f"metrics {family}: only the simulator")
                elif kind != sglang[probe][family]:
                    found.add(f"metrics {family}: SGLang {sglang[probe][family]}, simulator {kind}")
            continue
        if probe in ("server_info", "internal_states"):
            # one entry per resolved server argument: compared as key sets below
            sim_keys, sglang_keys = set(sim[probe]), set(sglang[probe])
            found.update(f"{probe} {k}: only SGLang" for k in sglang_keys - sim_keys)
            found.update(f"{probe} {k}: only the simulator" for k in sim_keys - sglang_keys)
            continue
        found |= differences(probe, sim[probe], sglang[probe])
    return found


# what repro reads from /metrics (repro.bench.serverstate's gauges, the bench's counters and
# histograms): both servers must serve these families with the same type and labels
READ_FAMILIES = (
    "sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage",
    "sglang:cache_hit_rate", "sglang:gen_throughput", "sglang:spec_accept_length",
    "sglang:generation_tokens", "sglang:prompt_tokens", "sglang:time_to_first_token_seconds",
    "sglang:inter_token_latency_seconds", "sglang:e2e_request_latency_seconds",
)  # fmt: skip


def test_the_metrics_repro_reads_are_served_alike(pair: Pair) -> None:
    for server in (pair.sim, pair.sglang):  # a stream, so that ITL has samples
        call(server.url, "/generate", generate(True))
    sim = metric_shape(call(pair.sim.url, "/metrics").body)
    sglang = metric_shape(call(pair.sglang.url, "/metrics").body)
    for family in READ_FAMILIES:
        assert family in sglang, f"SGLang serves no {family}"
        assert sim.get(family) == sglang[family], family


def test_every_difference_is_fixed_or_documented(pair: Pair) -> None:
    found = found_differences(pair)
    listed = documented()  # a path may be a pattern: `sim_*`
    new = sorted(f for f in found if not any(fnmatchcase(f, row) for row in listed))
    gone = sorted(row for row in listed if not any(fnmatchcase(f, row) for f in found))
    assert not new, f"undocumented differences (fix or list in {DOC.name}):\n" + "\n".join(new)
    assert not gone, f"documented differences no longer found ({DOC.name}):\n" + "\n".join(gone)


@pytest.fixture(params=["sim", "sglang"])
def server(request: pytest.FixtureRequest, pair: Pair) -> Sim:
    return getattr(pair, request.param)  # type: ignore[no-any-return]


def test_generate_speculative_counts_mean_the_same(server: Sim) -> None:
    meta = call(server.url, "/generate", generate(False)).body["meta_info"]
    draft = call(server.url, "/server_info").body["speculative_num_draft_tokens"]
    assert meta["completion_tokens"] == 24 and meta["finish_reason"]["type"] == "length"
    assert meta["spec_accept_length"] == pytest.approx(
        meta["completion_tokens"] / meta["spec_verify_ct"]
    )
    assert meta["spec_num_proposed_drafts"] == meta["spec_verify_ct"] * (draft - 1)
    assert sum(meta["spec_correct_drafts_histogram"]) == meta["spec_verify_ct"]
    accepted = sum(k * n for k, n in enumerate(meta["spec_correct_drafts_histogram"]))
    assert accepted == meta["spec_num_correct_drafts"]


def test_streams_are_cumulative_and_end_with_done(server: Sim) -> None:
    reply = call(server.url, "/generate", generate(True))
    events = [e for e in reply.events if e != "[DONE]"]
    assert reply.events[-1] == "[DONE]"
    lengths = [len(e["output_ids"]) for e in events]
    assert lengths == sorted(lengths) and lengths[-1] == 24
    assert all(e["meta_info"]["finish_reason"] is None for e in events[:-1])
    assert "spec_verify_ct" in events[-1]["meta_info"]
    assert all("spec_verify_ct" not in e["meta_info"] for e in events[:-1])


def test_chat_spec_details_only_when_asked(server: Sim) -> None:
    plain = stream_parts(call(server.url, "/v1/chat/completions", chat(False)))
    asked = stream_parts(call(server.url, "/v1/chat/completions", chat(True)))
    assert "sglext" not in plain and "usage" in plain
    details = asked["sglext"]["sglext"]["spec_tokens_details"]
    usage = asked["usage"]["usage"]
    assert usage["completion_tokens"] == 24
    assert details["spec_accept_length"] == pytest.approx(24 / details["spec_verify_ct"])


def test_server_info_reports_the_speculative_limits(server: Sim) -> None:
    info: dict[str, Any] = call(server.url, "/server_info").body
    assert info["max_running_requests"] == 48  # speculative_hook.py, unset by the argv
    assert info["speculative_num_steps"] == 1 and info["speculative_eagle_topk"] == 1
    assert info["speculative_num_draft_tokens"] == 4  # the drafter's block_size
    assert info["internal_states"][0]["effective_max_running_requests_per_dp"] == 48


def test_an_aborted_stream_ends_with_an_abort_reason(server: Sim) -> None:
    """POST /abort_request mid-stream: the scheduler drops the request (AbortReq to SGLang's
    scheduler process, which answers with an AbortReq for it) and the stream ends."""
    rid = f"conformance-abort-{server.port}"
    body = generate(True)
    body["rid"] = rid
    body["sampling_params"]["max_new_tokens"] = 3000
    replies: list[Any] = []
    reader = threading.Thread(target=lambda: replies.append(call(server.url, "/generate", body)))
    reader.start()
    deadline = time.monotonic() + 60
    while reader.is_alive() and time.monotonic() < deadline:  # until the request is there
        call(server.url, "/abort_request", {"rid": rid})
        reader.join(0.5)
    assert replies, "the aborted stream did not end"
    last = [e for e in replies[0].events if e != "[DONE]"][-1]
    assert last["meta_info"]["finish_reason"]["type"] == "abort"
    assert last["meta_info"]["completion_tokens"] < 3000
