"""Run state, run records, datasets and prompt files that are nested absurdly deep, not UTF-8
or out of range: one error line naming the file, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from repro.cli import main
from repro.runfolder import RunFolder

DEEP = "[" * 100_000 + "]" * 100_000


def _one_line(result: Result, *words: str) -> None:
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    error = result.output.strip().splitlines()[0]
    assert error.startswith("error: "), result.output
    for word in words:
        assert word in error, error


def _bench_run(tmp_path: Path) -> Path:
    folder = tmp_path / "benched"
    folder.mkdir()
    workload = {"input_len": 8, "output_len": 8, "dataset": "random", "prompts_per_level": 1,
                "warmup": 0, "repeats": 1}  # fmt: skip
    run = {"run_id": "b", "recipe_name": "demo", "kind": "bench", "status": "failed",
           "server_url": "http://127.0.0.1:9", "workload": workload}  # fmt: skip
    RunFolder(folder).run_file.write_text(json.dumps(run))
    RunFolder(folder).summary_file.write_text(json.dumps({"levels": []}))
    RunFolder(folder).recipe_file.write_text(json.dumps({"name": "demo", "bench": workload}))
    return folder


@pytest.mark.parametrize("name", ["run_file", "summary_file", "recipe_file"])
@pytest.mark.parametrize(
    ("content", "words"),
    [(DEEP.encode(), "nested deeper"), (b'{"a": "\xe9"}', "not UTF-8 text")],
    ids=["deep", "latin1"],
)
def test_bench_resume_of_a_hostile_record(
    tmp_path: Path, name: str, content: bytes, words: str
) -> None:
    folder = _bench_run(tmp_path)
    path: Path = getattr(RunFolder(folder), name)
    path.write_bytes(content)
    _one_line(CliRunner().invoke(main, ["bench", "--resume", str(folder)]), path.name, words)


@pytest.mark.parametrize(
    "command", [["bench", "demo", "--dataset"], ["accept", "demo", "--prompt-sets"]]
)
@pytest.mark.parametrize(
    ("content", "words"),
    [(DEEP, "nested"), ('[{"prompt": "x"}]' + "\n" + DEEP, "nested")],
    ids=["deep", "deep-line"],
)
def test_a_deeply_nested_prompt_file(
    tmp_path: Path, command: list[str], content: str, words: str
) -> None:
    path = tmp_path / "prompts.json"
    path.write_text(content)
    result = CliRunner().invoke(main, [*command, str(path), "--url", "http://127.0.0.1:9"])
    _one_line(result, "prompts.json", words)
