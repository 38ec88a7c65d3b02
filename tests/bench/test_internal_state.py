"""`/server_info` `internal_states` read as typed InternalState, leniently (as bench_serving)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from repro.bench.plausible import acceptance_problem
from repro.bench.server import is_simulated, served_model, server_accept_length
from repro.bench.serverstate import server_limits
from repro.runfolder import RunFolder
from repro.schema.serverinfo import InternalState, ServerInfo

FIXTURE = RunFolder(Path(__file__).parents[1] / "fixtures" / "h200-sglang-0.5.23").server_info_file


def _info(doc: dict[str, Any]) -> ServerInfo:
    return ServerInfo.model_validate(doc)


def first_state(doc: dict[str, Any]) -> InternalState | None:
    return _info(doc).first_state


def test_sglang_0_5_23s_state_reads_as_attributes() -> None:
    info = _info(json.loads(FIXTURE.read_text()))
    state = info.first_state
    assert state is not None and state.world_size == 1
    assert state.effective_max_running_requests_per_dp == 4096
    assert state.memory_usage and state.memory_usage["token_capacity"] == 291623552
    assert state.avg_spec_accept_length is None and not is_simulated(info)
    limits = server_limits(info)
    assert limits is not None and limits.effective_max_running_requests_per_dp == 4096
    assert info.tp_size == 1 and info.max_total_num_tokens and info.decode_log_interval == 40
    recorded = info.model_dump(mode="json", exclude_unset=True)
    assert recorded["internal_states"][0]["decode_cuda_graph_bs"] == []  # every key is kept
    assert recorded == json.loads(FIXTURE.read_text())  # the report whole, nothing changed


def test_odd_values_read_as_none_and_never_fail() -> None:
    odd = {"internal_states": ["no object", {"avg_spec_accept_length": "4.0", "simulated": 1}]}
    state = first_state(odd)
    assert state is not None and state.avg_spec_accept_length is None and state.simulated
    assert server_accept_length(_info(odd)) is None
    for value, read in ((True, None), (3, 3.0), (2000.0, 2000.0)):
        doc = {"internal_states": [{"avg_spec_accept_length": value}]}
        assert server_accept_length(_info(doc)) == read
    # read as reported; what no verify step can give is judged where the level is built
    assert acceptance_problem(2000.0, 8, "acceptance") is not None
    assert acceptance_problem(3.0, 8, "acceptance") is None
    assert first_state({"internal_states": "x"}) is None and first_state({}) is None
    assert served_model(_info({"internal_states": [{"served_model_name": "m"}]})) == "m"
    assert served_model(_info({"internal_states": [{"served_model_name": 7}]})) == "default"


def test_server_arguments_of_another_type_read_as_none_and_unknown_keys_stay() -> None:
    info = _info({"tp_size": "2", "model_path": 5, "speculative_algorithm": "DFLASH", "new": 1})
    assert info.tp_size is None and info.model_path is None
    assert info.speculative_algorithm == "DFLASH" and info.reported("tp_size")
    assert not info.reported("pp_size") and info.model_extra == {"new": 1}
    assert served_model(info) == "default"
