"""`repro bench` against the simulator: run records, resume, a dying server, bad servers."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repro.bench import BenchOptions, RequestResult, run_bench
from repro.bench.session import unreachable
from repro.bench.target import BenchTarget
from repro.cli import main
from repro.cli.bench import summary_table
from repro.errors import ReproError
from repro.runfolder import RunFolder
from repro.schema.level import Level, Load
from tests.support.ports import free_port
from tests.support.simulator import Sim, Simulators

LEVEL_KEYS = {
    "max_concurrency", "concurrency", "repeat", "completed", "failed", "errors", "duration",
    "request_throughput", "prompt_throughput", "output_throughput", "output_throughput_per_gpu",
    "output_throughput_per_user", "total_prompt_tokens", "total_output_tokens",
    *(f"{s}_{m}_ms" for s in ("mean", "median", "p90", "p99")
      for m in ("ttft", "itl", "tpot", "e2e_latency")),
    "accept_length_pooled", "accept_length", "request_goodput",
}  # fmt: skip
ROW_KEYS = {
    "concurrency", "repeat", "index", "ok", "error_kind", "prompt_tokens", "completion_tokens",
    "cached_tokens", "spec_verify_ct", "ttft_s", "itl_s", "chunk_gap_s", "chunk_tokens", "e2e_s",
    "start_s", "finish_reason",
}  # fmt: skip


def _opts(url: str, runs: Path, **kw: Any) -> BenchOptions:
    base: dict[str, Any] = dict(
        url=url, concurrencies=[1, 4], input_len=32, output_len=16, prompts=8, runs_dir=runs,
    )  # fmt: skip
    base.update(kw)
    return BenchOptions(**base)


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_bench_writes_a_run_record(sim_spec: Sim, demo: Any, runs: Path) -> None:
    result = run_bench(BenchTarget.from_recipe(demo), _opts(sim_spec.url, runs))
    run_dir = result.run_dir
    assert run_dir.parent == runs and run_dir.name.endswith("-demo")
    run = json.loads(RunFolder(run_dir).run_file.read_text())
    assert run["status"] == "complete" and run["simulated"] is True
    assert run["kind"] == "bench" and run["endpoint"] == "generate"
    assert run["workload"]["prompts_per_level"] == 8 and run["workload"]["output_len"] == 16
    assert json.loads(RunFolder(run_dir).recipe_file.read_text())["bench"]["concurrencies"] == [
        1,
        4,
    ]
    assert json.loads(RunFolder(run_dir).server_info_file.read_text())["simulated"] is True
    summary = json.loads(RunFolder(run_dir).summary_file.read_text())
    assert [(lv["max_concurrency"], lv["repeat"]) for lv in summary["levels"]] == [(1, 0), (4, 0)]
    for level in summary["levels"]:
        assert set(level) >= LEVEL_KEYS
        assert level["completed"] == 8 and level["total_output_tokens"] == 8 * 16
        assert 1.0 < level["accept_length_pooled"] < 8.0
        assert 1.0 < level["accept_length"] < 8.0  # the server's, as bench_serving reads it
        assert 0 < level["concurrency"] <= level["max_concurrency"]  # achieved
        assert level["mean_itl_ms"] > 0 and level["median_ttft_ms"] > 0
    rows = _rows(RunFolder(run_dir).requests_file(4, 0))
    assert len(rows) == 8 and set(rows[0]) >= ROW_KEYS  # plus "error": its message
    assert all(r["ok"] and r["completion_tokens"] == 16 and r["spec_verify_ct"] for r in rows)
    # speculative chunks carry several tokens: fewer gaps than tokens, one ITL per token
    assert all(len(r["chunk_gap_s"]) < 15 and len(r["itl_s"]) == 15 for r in rows)
    assert all(sum(r["chunk_tokens"]) == 15 for r in rows)
    level4 = summary["levels"][1]
    tokens = sum(r["completion_tokens"] for r in rows)
    pooled = tokens / sum(r["spec_verify_ct"] for r in rows)
    assert level4["accept_length_pooled"] == pytest.approx(pooled)
    assert not list(run_dir.rglob("*.tmp"))


def test_chat_endpoint_and_poisson_arrivals(sim_plain: Sim, demo_plain: Any, runs: Path) -> None:
    result = run_bench(
        BenchTarget.from_recipe(demo_plain),
        _opts(sim_plain.url, runs, endpoint="chat", concurrencies=None, request_rates=[50.0],
              max_concurrency=2),
    )  # fmt: skip
    (level,) = result.levels
    assert level.completed == 8 and level.accept_length is None
    assert level.total_output_tokens == 8 * 16
    assert level.load == Load("rate", 50.0) and level.concurrency == 2
    assert level.arrival is not None and level.arrival.mode == "poisson"
    assert level.arrival.max_concurrency == 2
    run = json.loads(RunFolder(result.run_dir).run_file.read_text())
    assert run["endpoint"] == "chat" and run["workload"]["request_rate"] == [50.0]
    rows = _rows(RunFolder(result.run_dir).requests_file(level.load, 0))
    assert sorted(r["start_s"] for r in rows)[-1] > 0.02  # arrivals spread out, not all at t=0
    assert all(r["offered_s"] is not None for r in rows)


def test_resume_never_repeats_a_finished_level(sim_spec: Sim, demo: Any, runs: Path) -> None:
    first = run_bench(
        BenchTarget.from_recipe(demo), _opts(sim_spec.url, runs, concurrencies=[1, 2, 4])
    )
    run_dir = first.run_dir
    # imitate a crash during level c4: its JSONL and summary entry never got written
    RunFolder(run_dir).requests_file(4, 0).unlink()
    summary = json.loads(RunFolder(run_dir).summary_file.read_text())
    summary["levels"] = summary["levels"][:2]
    RunFolder(run_dir).summary_file.write_text(json.dumps(summary))
    before = RunFolder(run_dir).requests_file(1, 0).read_bytes()
    seen: list[Load] = []

    class Seen:
        def level_started(self, load: Load, repeat: int, total: int) -> None:
            seen.append(load)

        def request_done(self, result: RequestResult) -> None:
            pass

        def level_done(self, summary: Level) -> None:
            pass

    resumed = run_bench(None, BenchOptions(resume=run_dir), Seen())
    assert seen == [Load("c", 4)]
    assert resumed.status == "complete"
    assert [lv.concurrency for lv in resumed.levels] == [1, 2, 4]
    assert RunFolder(run_dir).requests_file(1, 0).read_bytes() == before
    # a plan no sweep could have written is one line, naming the file
    recipe = json.loads(RunFolder(run_dir).recipe_file.read_text())
    recipe["bench"]["concurrencies"] = "1,2"
    RunFolder(run_dir).recipe_file.write_text(json.dumps(recipe))
    with pytest.raises(ReproError, match=r"recipe\.json: bench\.concurrencies: ") as err:
        run_bench(None, BenchOptions(resume=run_dir))
    assert err.value.hint == "is this a bench run?"


def test_server_dying_mid_sweep_fails_the_run_and_keeps_levels(
    simulator: Simulators, tmp_path: Path, demo_plain: Any, runs: Path
) -> None:
    server = simulator.tiny(REPRO_SIM_TIME_SCALE="0.3")
    try:

        class KillAfterFirst:
            def level_started(self, load: Load, repeat: int, total: int) -> None:
                pass

            def request_done(self, result: RequestResult) -> None:
                pass

            def level_done(self, summary: Level) -> None:
                server.kill()

        opts = _opts(
            server.url, runs, concurrencies=[1, 2], read_timeout=5,
        )  # fmt: skip
        result = run_bench(BenchTarget.from_recipe(demo_plain), opts, KillAfterFirst())
    finally:
        server.stop()
    assert result.status == "failed"
    run = json.loads(RunFolder(result.run_dir).run_file.read_text())
    assert run["status"] == "failed" and "c2-r0" in run["error"]
    assert [lv.concurrency for lv in result.levels] == [1]
    assert RunFolder(result.run_dir).requests_file(1, 0).exists()
    assert not RunFolder(result.run_dir).requests_file(2, 0).exists()


def test_unreachable_server_is_a_clear_error(demo: Any, runs: Path) -> None:
    with pytest.raises(ReproError, match="cannot reach the server") as err:
        run_bench(BenchTarget.from_recipe(demo), _opts(f"http://127.0.0.1:{free_port()}", runs))
    assert err.value.hint and "--url" in err.value.hint
    assert not runs.exists()


def test_a_silent_server_and_a_bare_error_each_say_something() -> None:
    """A timeout and an OSError without a message were once "cannot reach the server at X: "."""
    silent = unreachable("http://127.0.0.1:1", TimeoutError())
    assert silent.message == "the server at http://127.0.0.1:1 did not answer within 30 s"
    assert unreachable("http://127.0.0.1:1", OSError()).message.endswith(": OSError")


@pytest.fixture()
def not_sglang() -> Iterator[str]:
    class NotFound(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_server_that_is_not_sglang(not_sglang: str, demo: Any, runs: Path) -> None:
    with pytest.raises(ReproError, match="does not look like an SGLang server"):
        run_bench(BenchTarget.from_recipe(demo), _opts(not_sglang, runs))


def test_empty_level_is_refused(sim_plain: Sim, demo: Any, runs: Path) -> None:
    with pytest.raises(ReproError, match="empty"):
        run_bench(BenchTarget.from_recipe(demo), _opts(sim_plain.url, runs, prompts=0))


def test_cli_prints_run_dir_and_json(sim_spec: Sim, tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "cli-run"
    args = ["bench", "demo", "--url", sim_spec.url, "--concurrency", "2", "--prompts", "4",
            "--input-len", "16", "--output-len", "8", "--output", str(out)]  # fmt: skip
    res = runner.invoke(main, args)
    assert res.exit_code == 0, res.output
    assert res.stdout.strip().splitlines()[-1] == str(out)
    res = runner.invoke(main, [*args[:-1], str(tmp_path / "cli-json"), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout[res.stdout.index("{") :])
    assert doc["status"] == "complete" and doc["levels"][0]["completed"] == 4
    res = runner.invoke(main, ["bench", "demo", "--url", f"http://127.0.0.1:{free_port()}"])
    assert res.exit_code == 1 and "cannot reach" in res.output and "Traceback" not in res.output


def test_cli_slo_flags_give_goodput(sim_spec: Sim, tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["bench", "demo", "--url", sim_spec.url, "--concurrency", "2", "--prompts", "4",
            "--input-len", "16", "--output-len", "8", "--json"]  # fmt: skip
    loose = [*base, "--output", str(tmp_path / "loose"), "--slo", "ttft_ms=60000",
             "--slo", "tpot_ms=60000"]  # fmt: skip
    res = runner.invoke(main, loose)
    assert res.exit_code == 0, res.output
    level = json.loads(res.stdout[res.stdout.index("{") :])["levels"][0]
    assert level["request_goodput"] == pytest.approx(level["request_throughput"])
    assert level["slo_attainment"] == 1.0 and level["goodput_slos_ms"] == {
        "ttft": 60000.0,
        "tpot": 60000.0,
    }
    headers = [str(c.header) for c in summary_table([Level.model_validate(level)]).columns]
    assert headers[-1] == "goodput req/s"
    run = json.loads(RunFolder(tmp_path / "loose").run_file.read_text())
    assert run["slos"] == {"ttft": 60000.0, "tpot": 60000.0}
    res = runner.invoke(main, [*base, "--output", str(tmp_path / "tight"), "--slo", "ttft_ms=0.01"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout[res.stdout.index("{") :])["levels"][0]["request_goodput"] == 0.0
    res = runner.invoke(main, ["bench", "--resume", str(tmp_path / "loose"), "--slo", "e2e_ms=9"])
    assert res.exit_code == 1 and "resume without --slo" in res.output
    res = runner.invoke(main, [*base, "--slo", "ttft=500"])
    assert res.exit_code == 1 and "KEY=MILLISECONDS" in res.output
    assert "Traceback" not in res.output


def test_cli_bench_with_only_a_url(sim_spec: Sim, tmp_path: Path) -> None:
    out = tmp_path / "url-only"
    host_port = sim_spec.url.split("//", 1)[1].rstrip("/")
    res = CliRunner().invoke(
        main,
        ["bench", "--url", sim_spec.url, "--concurrency", "1,2", "--prompts", "3",
         "--input-len", "16", "--output-len", "8", "--output", str(out)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    run = json.loads(RunFolder(out).run_file.read_text())
    assert run["recipe_name"] == host_port and run["status"] == "complete"
    summary = json.loads(RunFolder(out).summary_file.read_text())
    assert [lv["max_concurrency"] for lv in summary["levels"]] == [1, 2]
    assert json.loads(RunFolder(out).recipe_file.read_text())["bench"]["prompts_per_level"] == 3
    res = CliRunner().invoke(main, ["bench", "--resume", str(out)])
    assert res.exit_code == 0, res.output  # a URL-only run resumes like any other
    res = CliRunner().invoke(main, ["report", str(out)])
    assert res.exit_code == 0 and host_port in res.output, res.output
    res = CliRunner().invoke(main, ["bench"])
    assert res.exit_code == 1 and "--url" in res.output and "Traceback" not in res.output


def test_cli_without_a_terminal_prints_a_line_per_level(sim_spec: Sim, tmp_path: Path) -> None:
    args = ["bench", "demo", "--url", sim_spec.url, "--concurrency", "1,2", "--prompts", "4",
            "--input-len", "16", "--output-len", "8", "--output", str(tmp_path / "o")]  # fmt: skip
    res = CliRunner().invoke(main, args)  # its stderr is no terminal, as under `| tee` or CI
    assert res.exit_code == 0, res.output
    lines = res.stderr.splitlines()
    for c in (1, 2):
        assert f"c={c} rep=0: warm-up, 2 requests" in lines  # the demo recipe warms up twice
        assert f"c={c} rep=0: 4 requests" in lines
        assert any(line.startswith(f"c={c} rep=0: done in ") for line in lines), res.stderr
    assert lines.index("c=1 rep=0: warm-up, 2 requests") < lines.index("c=1 rep=0: 4 requests")
