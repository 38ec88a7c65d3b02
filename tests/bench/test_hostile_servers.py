"""`repro bench` and `repro accept` against servers that send what no server should (issue 27:
hangs, tracebacks, impossible numbers kept as valid): each case ends by itself within the
client's limits, prints no traceback, and leaves either a failed run that says why or an
invalid level / prompt set that says why, in a record of strict JSON."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from repro.cli import main
from repro.runfolder import RunFolder
from tests.bench.hostileserver import (
    CHUNKED_SSE,
    HostileServer,
    chunk,
    hostile_server,
    json_response,
    meta_event,
    sse,
    stream,
)

pytestmark = pytest.mark.timeout(60)

Writer = asyncio.StreamWriter
Scenario = Callable[[HostileServer, int, Writer], Awaitable[None]]


def _strict(text: str) -> Any:
    def refuse(literal: str) -> None:
        raise AssertionError(f"{literal} is not JSON")

    return json.loads(text, parse_constant=refuse)


def _records_are_strict_json(run_dir: Path) -> None:
    for path in run_dir.rglob("*.json*"):
        lines = path.read_text().splitlines() if path.suffix == ".jsonl" else [path.read_text()]
        for line in lines:
            _strict(line)


def _no_traceback(res: Result) -> None:
    assert "Traceback" not in res.output, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception


def _bench(url: str, out: Path, *extra: str) -> Result:
    args = ["bench", "--url", url, "--concurrency", "2", "--prompts", "2", "--input-len", "8",
            "--output-len", "8", "--read-timeout", "1", "--request-timeout", "2",
            "--metrics-interval", "0.5", "--output", str(out), *extra]  # fmt: skip
    return CliRunner().invoke(main, args)


def _valid(n: int = 8) -> bytes:
    events = [meta_event(completion_tokens=k) for k in range(1, n)]
    return stream(*events, meta_event(completion_tokens=n, finish_reason={"type": "length"}))


# ---- the cases: (scenario, error kind, what the error says) ----------------------------------


def _sends(data: bytes) -> Scenario:
    async def scenario(server: HostileServer, n: int, writer: Writer) -> None:
        writer.write(data)

    return scenario


async def _trickle(server: HostileServer, n: int, writer: Writer) -> None:
    """A valid head, then an SSE comment every 50 ms: never silent, never done."""
    writer.write(CHUNKED_SSE)
    while not writer.is_closing():
        writer.write(chunk(b": tick\n\n"))
        await writer.drain()
        await asyncio.sleep(0.05)


async def _silent(server: HostileServer, n: int, writer: Writer) -> None:
    await asyncio.sleep(3600)


async def _endless_event(server: HostileServer, n: int, writer: Writer) -> None:
    """`data: xxx...` without a newline, 64 KiB a write, until the client hangs up."""
    writer.write(CHUNKED_SSE + chunk(b"data: "))
    piece = chunk(b"x" * 65536)
    for _ in range(4096):  # 256 MiB at most
        if writer.is_closing():
            return
        writer.write(piece)
        await writer.drain()


CASES: dict[str, tuple[Scenario, str, str]] = {
    "comment byte trickle": (_trickle, "timeout", "request timeout (2 s)"),
    "silence before the head": (_silent, "timeout", "read timeout (1 s)"),
    "an event without end": (_endless_event, "protocol", "SSE event of over"),
    "Content-Length: abc": (
        _sends(b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\ndata: x\n\n"),
        "protocol",
        "malformed HTTP response",
    ),
    "chunk size zz": (
        _sends(CHUNKED_SSE + b"zz\r\ndata: x\n\n\r\n"),
        "protocol",
        "malformed HTTP response",
    ),
    "completion_tokens 2^62": (
        _sends(stream(meta_event(completion_tokens=2**62))),
        "implausible",
        "completion_tokens",
    ),
    "completion_tokens 10^30": (
        _sends(stream(meta_event(completion_tokens=10**30))),
        "implausible",
        "completion_tokens",
    ),
    "completion_tokens above max_new_tokens": (
        _sends(_valid(9)),
        "implausible",
        "more than the request's max tokens 8",
    ),
    "negative prompt_tokens": (
        _sends(stream(meta_event(prompt_tokens=-5))),
        "implausible",
        "prompt_tokens",
    ),
    "negative spec_verify_ct": (
        _sends(stream(meta_event(spec_verify_ct=-128))),
        "implausible",
        "spec_verify_ct",
    ),
    "more verify steps than tokens": (
        _sends(stream(meta_event(completion_tokens=2, spec_verify_ct=40))),
        "implausible",
        "spec_verify_ct 40",
    ),
    "completion_tokens going back": (
        _sends(stream(meta_event(completion_tokens=5), meta_event(completion_tokens=3))),
        "implausible",
        "went back from 5 to 3",
    ),
    "a NaN literal": (
        _sends(stream(sse(b'{"meta_info":{"completion_tokens":1,"e2e_latency":NaN}}'))),
        "protocol",
        "undecodable",
    ),
    "an endless prompt count": (
        _sends(stream(meta_event(prompt_tokens=10**9))),
        "implausible",
        "prompt_tokens 1000000000",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_every_request_failing_fails_the_run_with_its_reason(case: str, tmp_path: Path) -> None:
    scenario, kind, says = CASES[case]
    with hostile_server(scenario) as url:
        res = _bench(url, tmp_path / "run")
    _no_traceback(res)
    assert res.exit_code == 1
    run = _strict(RunFolder(tmp_path / "run").run_file.read_text())
    assert run["status"] == "failed"
    assert f"({kind}: 2)" in run["error"] and says in run["error"], run["error"]
    assert run["client_limits"] == {
        "read_timeout_s": 1.0, "request_timeout_s": 2.0, "max_event_bytes": 64 * 1024 * 1024,
    }  # fmt: skip
    _records_are_strict_json(tmp_path / "run")


def test_an_event_limit_given_on_the_cli_holds(tmp_path: Path) -> None:
    with hostile_server(_endless_event) as url:
        res = _bench(url, tmp_path / "run", "--max-event-bytes", "100000")
    _no_traceback(res)
    run = _strict(RunFolder(tmp_path / "run").run_file.read_text())
    assert "(limit 100000)" in run["error"] and run["client_limits"]["max_event_bytes"] == 100000


def _every_other(bad: bytes, good: bytes | None = None) -> Scenario:
    """Valid answers (`good`, else a valid stream), and `bad` for every second request."""

    async def scenario(server: HostileServer, n: int, writer: Writer) -> None:
        writer.write(bad if n % 2 == 0 else good or _valid())

    return scenario


def test_an_impossible_value_in_some_requests_makes_the_level_invalid(tmp_path: Path) -> None:
    bad = stream(meta_event(completion_tokens=8, spec_verify_ct=-3))
    with hostile_server(_every_other(bad)) as url:
        res = _bench(url, tmp_path / "run", "--max-failed-pct", "100")
    _no_traceback(res)
    assert res.exit_code == 0, res.output
    (level,) = _strict(RunFolder(tmp_path / "run").summary_file.read_text())["levels"]
    assert level["valid"] is False and level["errors"] == {"implausible": 1}
    assert any("no server can send" in r and "spec_verify_ct" in r for r in level["reasons"])
    assert level["completed"] == 1 and level["total_output_tokens"] == 8  # the bad one not kept
    _records_are_strict_json(tmp_path / "run")


async def _closes_after_answering(server: HostileServer, n: int, writer: Writer) -> None:
    """A keep-alive answer, then the connection closed: the client's pool holds a dead one."""
    writer.write(_valid())
    await writer.drain()
    writer.close()


async def _dies_mid_level(server: HostileServer, n: int, writer: Writer) -> None:
    """Answers the warmup, then dies as the level starts (as `docker kill` would)."""
    if n <= 2:
        writer.write(_valid())
    else:
        server.die()


def test_a_closed_pooled_connection_is_never_written_to(tmp_path: Path) -> None:
    with hostile_server(_closes_after_answering) as url:
        res = _bench(url, tmp_path / "run", "--concurrency", "1", "--prompts", "4")
    _no_traceback(res)
    (level,) = _strict(RunFolder(tmp_path / "run").summary_file.read_text())["levels"]
    # a closed connection seen before reuse costs a new one; one closed in the very moment
    # of reuse fails that request as disconnected, never as an exception
    assert set(level["errors"]) <= {"disconnected"} and level["completed"] >= 1, level


def test_a_server_dying_mid_level_fails_the_run_with_one_line(tmp_path: Path) -> None:
    with hostile_server(_dies_mid_level) as url:
        res = _bench(url, tmp_path / "run", "--prompts", "4")
    _no_traceback(res)
    assert res.exit_code == 1 and "the run failed" in res.output
    run = _strict(RunFolder(tmp_path / "run").run_file.read_text())
    assert run["status"] == "failed" and "every request of level c2-r0 failed" in run["error"]
    _records_are_strict_json(tmp_path / "run")


# ---- repro accept -----------------------------------------------------------------------------


def _accept_answer(**meta: Any) -> bytes:
    """The JSON body of a non-streaming /generate answer."""
    doc = {"text": "x", "output_ids": [1, 2, 3, 4],
           "meta_info": {"completion_tokens": 4, "spec_verify_ct": 2,
                         "spec_correct_drafts_histogram": [0, 2], **meta}}  # fmt: skip
    return json.dumps(doc).encode()


def _accept(url: str, out: Path) -> Result:
    args = ["accept", "demo", "--url", url, "--prompt-sets", "chat", "-n", "3", "--max-new-tokens",
            "8", "--read-timeout", "1", "--request-timeout", "2", "--output", str(out)]  # fmt: skip
    return CliRunner().invoke(main, args)


ACCEPT_VALUES = {
    "NaN": b"NaN",
    "Infinity": b"Infinity",
    "lots": b'"lots"',
    "a histogram of dicts": None,
    "-50": b"-50",
    "1e300": b"1e300",
    "more tokens than asked": b"4000",
}


@pytest.mark.parametrize("value", ACCEPT_VALUES)
def test_accept_refuses_impossible_meta_info(value: str, tmp_path: Path) -> None:
    if ACCEPT_VALUES[value] is None:
        bad = _accept_answer(spec_correct_drafts_histogram=[{"a": 1}, {"b": 2}])
    else:  # the literal as the server wrote it, in place of completion_tokens
        bad = _accept_answer(completion_tokens=123456789).replace(
            b"123456789", ACCEPT_VALUES[value] or b""
        )
    scenario = _every_other(json_response(bad), json_response(_accept_answer()))
    with hostile_server(scenario) as url:
        res = _accept(url, tmp_path / "accepted")
    _no_traceback(res)
    assert res.exit_code == 0, res.output
    doc = _strict(RunFolder(tmp_path / "accepted").accept_file.read_text())
    (chat,) = doc["sets"]
    assert chat["valid"] is False and chat["failed"] == 2 and chat["prompts"] == 1
    assert "values no server can send" in chat["reasons"][0]
    assert "invalid" in res.output
    limits = doc["protocol"]["client_limits"]
    assert (limits["read_timeout_s"], limits["request_timeout_s"]) == (1.0, 2.0)
    _records_are_strict_json(tmp_path / "accepted")


def test_accept_against_a_silent_server_ends_with_one_line(tmp_path: Path) -> None:
    with hostile_server(_silent) as url:
        res = _accept(url, tmp_path / "accepted")
    _no_traceback(res)
    assert res.exit_code == 1 and "read or request timeout" in res.output
