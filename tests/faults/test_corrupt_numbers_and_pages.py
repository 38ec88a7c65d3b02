"""Corrupt data is one error line, never a traceback: a parquet prompt file whose data pages
are damaged (its footer intact, so the columns still list), and a run record whose summary
holds a number no run measures (±1e308, or 1e309 that JSON reads as infinity) given to
`repro report --plots`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from repro.runfolder import RunFolder
from tests.support.cli import isolated_env, repro

RECORD = Path(__file__).resolve().parent.parent / "fixtures" / "h200-sglang-0.5.23" / "bench-chat"


def _one_line(stderr: str, *words: str) -> None:
    assert "Traceback" not in stderr, stderr
    first = stderr.splitlines()[0]
    assert first.startswith("error: "), stderr
    for word in words:
        assert word in first, first


def test_a_parquet_file_with_a_corrupt_page(tmp_path: Path, repo_root: Path) -> None:
    path = tmp_path / "prompts.parquet"
    pq.write_table(pa.table({"prompt": [f"prompt {i} " * 20 for i in range(2000)]}), path)
    data = bytearray(path.read_bytes())
    data[100 : len(data) // 2] = b"\xff" * (len(data) // 2 - 100)  # pages, not the footer
    path.write_bytes(bytes(data))
    assert pq.read_schema(path).names == ["prompt"]
    for command in (["bench", "demo", "--dataset"], ["accept", "demo", "--prompt-sets"]):
        result = repro(
            *command, str(path), "--url", "http://127.0.0.1:9", cwd=repo_root,
            env=isolated_env(tmp_path), timeout=120,
        )  # fmt: skip
        assert result.returncode == 1
        _one_line(result.stderr, "prompts.parquet", "corrupt parquet data")


@pytest.mark.parametrize("value", ["1e308", "-1e308", "1e309"])
def test_an_impossible_number_in_a_summary(tmp_path: Path, value: str) -> None:
    record = tmp_path / "bench-chat"
    shutil.copytree(RECORD, record)
    summary = json.loads(RunFolder(record).summary_file.read_text())
    summary["levels"][0]["output_throughput"] = "VALUE"
    text = json.dumps(summary).replace('"VALUE"', value)
    RunFolder(record).summary_file.write_text(text)
    result = repro(
        "report", str(record), "--plots", str(tmp_path / "plots"), cwd=tmp_path,
        env=isolated_env(tmp_path), timeout=120,
    )  # fmt: skip
    assert result.returncode == 1
    _one_line(result.stderr, "summary.json: levels[0].output_throughput", "not a measurement")
    assert not (tmp_path / "plots").exists()
