"""Issue 43, items 2 and 3: a number a server reports that the protocol does not allow (an
acceptance above draft tokens + 1 or below 1, a gauge that is NaN, infinite, negative or
absurd, simulator counters that are not numbers or go back) makes the level or prompt set
invalid with the number named; never a valid level, never a traceback. A `/metrics` page is
read within a size bound and its gauge lines within a count."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repro.bench.serverstate import MAX_GAUGE_LINES, parse_metrics
from repro.cli import main
from tests.bench.hostileserver import json_response
from tests.faults.routed_server import (
    INFO,
    Reply,
    generated,
    routed_server,
    sglang,
    text_response,
    tokens_stream,
)


def _levels(
    tmp_path: Path, info: dict[str, Any] | None = None, **routes: Reply
) -> list[dict[str, Any]]:
    """One bench level of 2 requests against the hostile server, as `--json` prints it."""
    paths = {"/" + name.replace("__", "/"): reply for name, reply in routes.items()}
    with routed_server(sglang(info, paths)) as url:
        result = CliRunner().invoke(
            main,
            ["bench", "--url", url, "--prompts", "2", "--concurrency", "1", "--output-len",
             "64", "--metrics-interval", "0.05", "--output", str(tmp_path / "run"), "--json"],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    levels: list[dict[str, Any]] = json.loads(result.stdout)["levels"]
    return levels


def _invalid_for(levels: list[dict[str, Any]], words: str) -> None:
    [level] = levels
    assert level["valid"] is False, level["reasons"]
    assert any(words in reason for reason in level["reasons"]), level["reasons"]


def test_more_tokens_per_verify_step_than_drafts_is_implausible(tmp_path: Path) -> None:
    """64 tokens in 1 verify step with 8 draft tokens: no step commits more than 9 (every
    other response; the rest are possible)."""

    def every_other(visit: int) -> bytes:
        return tokens_stream(64, spec_verify_ct=1 if visit % 2 else 8)

    levels = _levels(tmp_path, generate=every_other)
    _invalid_for(levels, "completion_tokens 64 in 1 verify steps")


@pytest.mark.parametrize("reported", [0.5, 64.0], ids=["below-1", "above-drafts"])
def test_a_server_acceptance_out_of_range_is_named(tmp_path: Path, reported: float) -> None:
    info = {**INFO, "internal_states": [{"avg_spec_accept_length": reported}]}
    levels = _levels(tmp_path, info, generate=tokens_stream(64))
    _invalid_for(levels, f"avg_spec_accept_length {reported:g} is outside [1, 9]")
    assert levels[0]["accept_length"] is None  # not recorded as the server's


@pytest.mark.parametrize(
    ("page", "words"),
    [
        (b"sglang:num_running_reqs 1e308\n", "num_running_reqs gauge read 1e+308"),
        (b"sglang:num_running_reqs -3\n", "num_running_reqs gauge read -3"),
        (b"sglang:token_usage NaN\n", "token_usage gauge read nan"),
        (b"sglang:gen_throughput +Inf\n", "gen_throughput gauge read inf"),
        (b"sglang:spec_accept_length 64\n", "sglang:spec_accept_length 64 is outside [1, 9]"),
    ],
    ids=["huge", "negative", "nan", "inf", "acceptance"],
)
def test_an_impossible_gauge_makes_the_level_invalid(
    tmp_path: Path, page: bytes, words: str
) -> None:
    levels = _levels(tmp_path, generate=tokens_stream(64), metrics=text_response(page))
    _invalid_for(levels, words)


def test_a_metrics_page_over_the_bound_is_skipped(tmp_path: Path) -> None:
    page = b"# padding\n" * (1024 * 1024) + b"sglang:num_running_reqs 1\n"  # 10 MiB
    [level] = _levels(tmp_path, generate=tokens_stream(64), metrics=text_response(page))
    assert level["server"]["samples"] == 0 and level["completed"] == 2
    assert not any("gauge" in reason for reason in level["reasons"])


def test_a_page_of_too_many_gauge_lines_is_refused() -> None:
    page = "".join(
        f'sglang:num_running_reqs{{tp_rank="{i}"}} 1\n' for i in range(MAX_GAUGE_LINES + 1)
    )
    with pytest.raises(ValueError, match="gauge lines"):
        parse_metrics(page, 0.0)


CLOCK = b'"steps": %s, "scheduled_s": 1, "behind_s": 0, "late_s": 0, "cpu_s": 0, "wall_s": 1'


def _clock(steps: bytes) -> bytes:
    return json_response(b'{"simulated": true, "time_scale": 1, ' + CLOCK % steps + b"}")


@pytest.mark.parametrize(
    ("readings", "words"),
    [
        ((b"NaN", b"NaN"), "the simulator's clock: not a JSON document"),
        ((b"1e400", b"1e400"), "the simulator's clock: not a JSON document"),
        ((b"100", b"50"), "counter steps went back from 100 to 50"),
    ],
    ids=["nan", "infinity", "back"],
)
def test_simulator_counters_that_cannot_be_are_named(
    tmp_path: Path, readings: tuple[bytes, bytes], words: str
) -> None:
    def clock(visit: int) -> bytes:
        return _clock(readings[min(visit, 2) - 1])

    levels = _levels(tmp_path, generate=tokens_stream(64), repro_sim__clock=clock)
    _invalid_for(levels, words)
    assert levels[0]["sim_clock"] is None


def test_accept_judges_a_set_of_impossible_acceptance_invalid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with routed_server(sglang(routes={"/generate": generated(64, 1)})) as url:
        result = CliRunner().invoke(
            main,
            ["accept", "--url", url, "--prompt-sets", "math", "-n", "2", "--max-new-tokens",
             "64", "--chat-template-fallback", "--json"],
        )  # fmt: skip
    assert result.exit_code == 1, result.output  # every request refused: nothing measured
    assert "64 tokens in 1 verify steps of at most 9 each" in result.output
