"""Multi-turn levels against the simulator: each turn carries the history, the cache state a
level starts from is set and recorded, and the server's cached_tokens are reported by turn."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from repro.bench import BenchOptions, run_bench
from repro.bench.prompts.conversations import Conversation, bench_conversations
from repro.bench.prompts.datasets import PromptSet, load_file
from repro.bench.target import BenchTarget
from repro.cli import main
from repro.runfolder import RunFolder
from repro.schema.conversation import Conversations
from repro.schema.dataset import FileSource
from tests.support.simulator import Sim

TURNS = 3


def _run(url: str, runs: Path, cache: str, **kw: Any) -> Any:
    opts = BenchOptions(
        url=url, concurrencies=[1], input_len=64, output_len=16, prompts=3, runs_dir=runs,
        conversation=Conversations(turns=TURNS, cache=cache), **kw,
    )  # fmt: skip
    return run_bench(BenchTarget.from_url(url), opts)


def test_later_turns_reuse_the_history_and_a_flush_starts_from_nothing(
    sim_plain: Sim, runs: Path
) -> None:
    result = _run(sim_plain.url, runs, "flushed")
    (level,) = result.levels
    talk = level.conversation
    assert talk is not None and talk.cache == "flushed" and talk.conversations == 3
    assert level.completed == 3 * TURNS and level.valid, level.reasons
    rows = [
        json.loads(x) for x in RunFolder(result.run_dir).requests_file(1, 0).read_text().split()
    ]
    assert [(r["conversation"], r["turn"]) for r in rows] == [
        (c, t) for c in range(3) for t in range(TURNS)
    ]
    # right after the flush nothing is cached; each later turn finds its history
    assert rows[0]["cached_tokens"] == 0
    for before, after in itertools.pairwise(rows):
        if after["turn"] > 0:
            assert after["prompt_tokens"] > before["prompt_tokens"] + 16  # history + answer
            assert after["cached_tokens"] >= before["prompt_tokens"] - 16  # 16-token blocks
    # the shared system prompt: later conversations' first turns hit it too
    firsts = [r for r in rows if r["turn"] == 0]
    assert all(r["cached_tokens"] >= 48 for r in firsts[1:])
    by_turn = {t.turn: t for t in talk.by_turn}
    assert by_turn[TURNS - 1].cache_hit_rate > by_turn[0].cache_hit_rate
    assert talk.cached_tokens == sum(r["cached_tokens"] for r in rows)


def test_a_warm_level_finds_the_system_prompt_cached(sim_plain: Sim, runs: Path) -> None:
    _run(sim_plain.url, runs, "flushed")
    result = _run(sim_plain.url, runs, "warm")
    talk = result.levels[0].conversation
    assert talk is not None and talk.cache == "warm"
    assert talk.by_turn[0].mean_cached_tokens >= 48  # left by the run before


def test_dialogues_send_their_own_user_turns_in_order(tmp_path: Path) -> None:
    dialogues = [["hi", "and then?", "why", "more"], ["only one"], ["a", "b"]]
    source = PromptSet("d", ["hi", "only one", "a"], FileSource(path="d", sha256="0"),
                       dialogues=dialogues)  # fmt: skip
    convs = bench_conversations(source, 3, 3, 8, seed=1)
    assert [c.user_turns[1:] for c in convs] == [["and then?", "why"], ["b"], ["and then?", "why"]]
    assert all(c.system is None and c.user_turns[0].endswith(("hi", "a")) for c in convs)
    messages = Conversation("sys", ["u0", "u1"]).messages(["a0"])
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]


def test_cli_turns_prints_cached_tokens_by_turn(sim_plain: Sim, tmp_path: Path) -> None:
    args = ["bench", "--url", sim_plain.url, "--concurrency", "2", "--prompts", "2",
            "--input-len", "32", "--output-len", "8", "--turns", "2", "--endpoint", "chat",
            "--output", str(tmp_path / "run"), "--json"]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert "conversations by turn" in res.stderr
    level = json.loads(res.stdout[res.stdout.index("{") :])["levels"][0]
    assert (
        level["conversation"]["cache"] == "flushed" and len(level["conversation"]["by_turn"]) == 2
    )
    res = CliRunner().invoke(main, ["bench", "--url", sim_plain.url, "--cache", "warm"])
    assert res.exit_code == 1 and "add --turns" in res.output and "Traceback" not in res.output


def test_sharegpt_and_openai_rows_give_their_user_turns(tmp_path: Path) -> None:
    path = tmp_path / "talks.jsonl"
    rows = [
        {"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"},
                           {"from": "human", "value": "and?"}]},
        {"conversations": [{"role": "system", "content": "be brief"},
                           {"role": "user", "content": "one"}, {"role": "user", "content": ""}]},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    found = load_file(path)
    assert found.prompts == ["hi", "one"]  # single-turn levels: the first user turns
    assert found.dialogues == [["hi", "and?"], ["one"]]
    convs = bench_conversations(found, 2, 4, 8)
    assert [c.user_turns[1:] for c in convs] == [["and?"], ["and?"]]  # 2+ turns only
