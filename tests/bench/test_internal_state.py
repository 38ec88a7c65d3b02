"""`/server_info` `internal_states` read as typed InternalState, leniently (as bench_serving)."""

from __future__ import annotations

import json
from pathlib import Path

from repro.bench.server import first_state, is_simulated, served_model, server_accept_length
from repro.bench.serverstate import server_limits
from repro.schema.machine import ServerInfo

FIXTURE = Path(__file__).parents[1] / "fixtures" / "h200-sglang-0.5.23" / "server_info.json"


def test_sglang_0_5_23s_state_reads_as_attributes() -> None:
    info = json.loads(FIXTURE.read_text())
    state = first_state(info)
    assert state is not None and state.world_size == 1
    assert state.effective_max_running_requests_per_dp == 4096
    assert state.memory_usage and state.memory_usage["token_capacity"] == 291623552
    assert state.avg_spec_accept_length is None and not is_simulated(info)
    limits = server_limits(info)
    assert limits is not None and limits.effective_max_running_requests_per_dp == 4096
    recorded = ServerInfo.model_validate(info).model_dump(mode="json", exclude_unset=True)
    assert recorded["internal_states"][0]["decode_cuda_graph_bs"] == []  # every key is kept


def test_odd_values_read_as_none_and_never_fail() -> None:
    odd = {"internal_states": ["no object", {"avg_spec_accept_length": "4.0", "simulated": 1}]}
    state = first_state(odd)
    assert state is not None and state.avg_spec_accept_length is None and state.simulated
    assert server_accept_length(odd) is None
    assert server_accept_length({"internal_states": [{"avg_spec_accept_length": True}]}) is None
    assert server_accept_length({"internal_states": [{"avg_spec_accept_length": 3}]}) == 3.0
    assert server_accept_length({"internal_states": [{"avg_spec_accept_length": 2000.0}]}) is None
    assert first_state({"internal_states": "x"}) is None and first_state({}) is None
    assert served_model({"internal_states": [{"served_model_name": "m"}]}) == "m"
    assert served_model({"internal_states": [{"served_model_name": 7}]}) == "default"
