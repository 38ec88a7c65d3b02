"""Every size the schema accepts is counted from the file before the work it asks for: a
campaign matrix's points before one is made, a prediction's requests before one is simulated,
a trace's lines only as far as the replay needs; past a documented limit, one error line with
the count."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from repro.bench.prompts.trace import load_trace
from repro.campaign.predict import MAX_PREDICTED_TOKENS
from repro.cli import main
from repro.exitcodes import ExitCode
from repro.schema.campaign import MAX_POINTS

LINE = {"timestamp": 0, "input_length": 4, "output_length": 2}


def _one_line_error(args: list[str]) -> str:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    return result.output.strip().splitlines()[0]


def test_a_matrix_of_a_hundred_million_points_is_counted_not_expanded(
    tmp_path: Path, repo_root: Path
) -> None:
    axes = "".join(
        f"  env.SGLANG_{axis}: [{', '.join(str(v) for v in range(100))}]\n" for axis in "ABCD"
    )
    path = tmp_path / "huge.yaml"
    path.write_text(f"machine: m\nbase: {repo_root / 'recipes' / 'demo.yaml'}\nmatrix:\n{axes}")
    error = _one_line_error(["campaign", "plan", "--no-predict", str(path)])
    assert "100000000 points (100 x 100 x 100 x 100" in error, error
    assert f"more than the {MAX_POINTS}" in error, error


def test_a_plan_whose_prediction_would_not_end_is_not_predicted(
    tmp_path: Path, repo_root: Path
) -> None:
    path = tmp_path / "long.yaml"
    path.write_text(
        f"machine: m\npoints: [{{recipe: {repo_root / 'recipes' / 'demo.yaml'}}}]\n"
        "bench: {concurrencies: [1, 2, 4], prompts_per_level: 1000000, repeats: 100, "
        "output_len: 1024}\n"
    )
    result = CliRunner().invoke(main, ["campaign", "plan", "--json", str(path)])
    assert result.exit_code == ExitCode.INCOMPLETE, result.output  # a plan without an estimate
    [point] = json.loads(result.stdout)["points"]
    assert point["predicted"] == []
    assert "not predicted: its plan simulates up to 300000600 requests" in point["prediction_error"]
    assert f"{MAX_PREDICTED_TOKENS:.3g}" in point["prediction_error"]


def test_a_trace_is_read_only_as_far_as_the_replay_needs(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    lines = [json.dumps({**LINE, "timestamp": t}) for t in (30, 10, 20)]
    path.write_text("\n".join([*lines, "not JSON: never read", *["{"] * 1000]) + "\n")
    trace = load_trace(str(path), limit=3)
    assert [r.timestamp_ms for r in trace.requests] == [10, 20, 30]  # sent in time order
    assert trace.source.kind == "file"
    # The line a longer replay would need is read, and named when it is no trace line.
    error = _one_line_error(
        ["bench", "demo", "--trace", str(path), "--prompts", "4", "--url", "http://127.0.0.1:9"]
    )
    assert "trace.jsonl:4: not a Mooncake trace line" in error, error
