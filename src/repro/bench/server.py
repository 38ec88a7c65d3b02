"""What a server's `/server_info` says about it: the served model, whether it is the
simulator, its speculative algorithm and acceptance, and what `server_info.json` records.
Fetching it is repro.bench.session's.
"""

from __future__ import annotations

from typing import Any

from repro.schema.serverinfo import ServerInfo


def server_info_record(info: ServerInfo, **recorded: Any) -> ServerInfo:
    """What `server_info.json` records: the server's report plus `recorded` (what repro knows
    beside it: `simulated`, the running image), each marked as set so that it is written."""
    return info.model_copy(update=recorded)


def served_model(info: ServerInfo) -> str:
    for value in (info.served_model_name, info.model_path):
        if value:
            return value
    state = info.first_state
    return state.served_model_name if state and state.served_model_name is not None else "default"


def is_simulated(info: ServerInfo) -> bool:
    if info.simulated:
        return True
    state = info.first_state
    return bool(state and state.simulated)


def speculative_algorithm(info: ServerInfo) -> str | None:
    value = info.speculative_algorithm
    return value if value not in (None, "", "NONE") else None


def server_accept_length(info: ServerInfo) -> float | None:
    """bench_serving's `accept_length` (benchmark/serving.py): `avg_spec_accept_length` of
    `internal_states[0]` (DP rank 0, cumulative since start or the last flush), as reported:
    repro.bench.plausible judges it."""
    state = info.first_state
    value = state.avg_spec_accept_length if state else None
    return float(value) if value is not None else None
