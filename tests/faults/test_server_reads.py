"""Issue 43, items 1 and 4: every response a server sends is read within bounds (size after
decompression, nesting depth), and the measuring client follows no redirect: each hostile
`/server_info` is one error line before any run folder exists, for bench and accept alike."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from repro.bench.client.bounded import Bound, fetch
from repro.bench.client.http1 import Pool
from repro.cli import main
from repro.runfolder import RunFolder
from tests.bench.hostileserver import json_response, threaded_server
from tests.faults.routed_server import (
    INFO,
    generated,
    gzipped_json,
    redirect,
    routed_server,
    sglang,
)

INFLATED = 64 * 1024 * 1024  # what a few kB of gzip become


def _bomb() -> bytes:
    return gzipped_json(b'{"version": "x", "pad": "' + b"a" * INFLATED + b'"}')


def _deep() -> bytes:
    return json_response(b'{"version": "x", "a": ' + b"[" * 5000 + b"]" * 5000 + b"}")


def _elsewhere() -> bytes:
    return redirect("http://127.0.0.1:9/server_info")


HOSTILE_INFOS: dict[str, tuple[Callable[[], bytes], str]] = {
    "gzip-bomb": (_bomb, "a response of over"),
    "deep": (_deep, "nested more than 32 deep"),
    "redirect": (_elsewhere, "redirect (HTTP 302 to http://127.0.0.1:9/server_info)"),
}


def _accept(url: str, prompts: int) -> list[str]:
    """accept a bare URL: one set of `prompts`, the built-in template (nothing fetched)."""
    return ["accept", "--url", url, "--prompt-sets", "math", "-n", str(prompts),
            "--chat-template-fallback"]  # fmt: skip


def _one_line(result: Result, words: str) -> None:
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    error = result.output.strip().splitlines()[0]
    assert error.startswith("error: ") and words in error, result.output


@pytest.mark.parametrize("case", HOSTILE_INFOS, ids=str)
def test_a_hostile_server_info_is_one_line_and_no_run(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reply, words = HOSTILE_INFOS[case]
    monkeypatch.chdir(tmp_path)
    with routed_server(sglang(routes={"/server_info": reply()})) as url:
        for command in (
            ["bench", "--url", url, "--prompts", "1", "--concurrency", "1"],
            _accept(url, 1),
        ):
            _one_line(CliRunner().invoke(main, command), words)
    assert not (tmp_path / "runs").exists()


def test_accept_follows_no_redirect_of_its_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checked server's /generate sends accept elsewhere: nothing is measured there."""
    monkeypatch.chdir(tmp_path)
    with routed_server(sglang()) as other, routed_server(
        sglang(routes={"/generate": redirect(other + "/generate")})
    ) as url:  # fmt: skip
        result = CliRunner().invoke(main, _accept(url, 2))
    _one_line(result, "every request of prompt set 'math' failed")
    assert f"a redirect (HTTP 302 to {other}/generate), not followed" in result.output
    [run_dir] = (tmp_path / "runs").iterdir()
    assert json.loads(RunFolder(run_dir).accept_file.read_text())["sets"] == []


def test_a_model_that_changes_mid_run_ends_the_bench_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second /server_info on reports another model: the run fails naming it, its first
    level never recorded as that server's."""
    monkeypatch.chdir(tmp_path)

    def info(visit: int) -> bytes:
        return json_response(INFO if visit == 1 else {**INFO, "model_path": "org/other"})

    with routed_server(sglang(routes={"/server_info": info})) as url:
        result = CliRunner().invoke(
            main, ["bench", "--url", url, "--prompts", "2", "--concurrency", "1,2",
                   "--output-len", "4"],
        )  # fmt: skip
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    [error] = [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert "changed during the run" in error
    assert "model_path=repro-sim/tiny-chat, now model_path=org/other" in error
    [run_dir] = (tmp_path / "runs").iterdir()
    run = json.loads(RunFolder(run_dir).run_file.read_text())
    assert run["status"] == "failed" and "changed during the run" in run["error"]
    assert not list(run_dir.glob("levels/*.jsonl"))


def test_accept_notices_a_model_that_changes_after_a_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server reports another model once the set is measured: the set is not kept as
    the checked server's, the run fails naming the change."""
    monkeypatch.chdir(tmp_path)

    def info(visit: int) -> bytes:
        return json_response(INFO if visit == 1 else {**INFO, "model_path": "org/other"})

    with routed_server(sglang(routes={"/server_info": info, "/generate": generated(4, 2)})) as url:
        result = CliRunner().invoke(main, _accept(url, 2))
    _one_line(result, "changed during the run")
    [run_dir] = (tmp_path / "runs").iterdir()
    assert json.loads(RunFolder(run_dir).accept_file.read_text())["sets"] == []
    assert json.loads(RunFolder(run_dir).run_file.read_text())["status"] == "failed"


def test_a_response_that_never_ends_is_cut_at_its_time_bound() -> None:
    """The time bound holds however steadily the bytes trickle (here: a header per 50 ms)."""

    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\n")
        while True:
            writer.write(b"x-pad: 1\r\n")
            await writer.drain()
            await asyncio.sleep(0.05)

    async def fetch_info(url: str) -> None:
        port = int(url.rsplit(":", 1)[1])
        pool = Pool("127.0.0.1", port, 5.0)
        try:
            await fetch(pool, b"GET /server_info HTTP/1.1\r\nHost: x\r\n\r\n", Bound(1024, 0.5))
        finally:
            pool.close()

    with (
        threaded_server(trickle, lambda listener: listener.close()) as (url, _listener),
        pytest.raises(TimeoutError),
    ):
        asyncio.run(fetch_info(url))
