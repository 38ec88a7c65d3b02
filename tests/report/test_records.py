"""Loading run records written by `repro bench` against the simulator."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.report import RunRecordError, load_run
from repro.runfolder import RunFolder
from repro.schema.accept import AcceptResults
from repro.schema.level import RequestRow, Summary
from repro.schema.machine import MachineInfo
from repro.schema.record import BenchRunInfo
from repro.schema.serverinfo import ServerInfo
from tests.report.conftest import Runs
from tests.report.helpers import jsonl_rows, raw_levels


def test_loads_real_bench_record(runs: Runs) -> None:
    run = load_run(runs.dflash)
    raw = raw_levels(runs.dflash)
    assert run.recipe_name == "demo-dflash"
    assert run.run.status == "complete"
    assert run.simulated  # the simulator says so in server_info and run.json
    assert run.concurrencies == [1, 4]
    assert len(run.levels) == len(raw) == 4  # 2 concurrencies x 2 repeats
    assert run.hardware_class == "no GPUs"
    assert run.machine_class == "sim demo, time-scale 1"  # the profile, as the machine
    assert run.accept is not None and {s.prompt_set for s in run.accept.sets} == {"chat", "code"}


def test_summary_agrees_with_per_request_rows(runs: Runs) -> None:
    run = load_run(runs.dflash)
    for level in run.levels:
        rows = run.requests(level.concurrency, level.repeat)
        assert rows == run.requests(level.concurrency, level.repeat)
        assert len(rows) == len(jsonl_rows(runs.dflash, level.concurrency, level.repeat))
        ok = [r for r in rows if r.ok]
        assert level.completed == len(ok)
        assert level.total_output_tokens == sum(r.completion_tokens or 0 for r in ok)
        verify = sum(r.spec_verify_ct or 0 for r in ok)
        assert level.accept_length == pytest.approx(level.total_output_tokens / verify)


def test_autoregressive_run_has_no_acceptance(runs: Runs) -> None:
    run = load_run(runs.ar)
    assert run.accept is None
    assert run.points("accept_length") == {}


def _copy(src: Path, tmp_path: Path) -> Path:
    dest = tmp_path / src.name
    shutil.copytree(src, dest)
    return dest


def test_missing_summary_names_the_file(runs: Runs, tmp_path: Path) -> None:
    run = _copy(runs.ar, tmp_path)
    RunFolder(run).summary_file.unlink()
    with pytest.raises(RunRecordError) as err:
        load_run(run)
    assert str(RunFolder(run).summary_file) in err.value.message and "missing" in err.value.message


def test_corrupt_json_names_the_file(runs: Runs, tmp_path: Path) -> None:
    run = _copy(runs.ar, tmp_path)
    text = RunFolder(run).run_file.read_text()
    RunFolder(run).run_file.write_text(text[: len(text) // 2])
    with pytest.raises(RunRecordError) as err:
        load_run(run)
    assert str(RunFolder(run).run_file) in err.value.message and "corrupt JSON" in err.value.message


def test_wrong_field_names_file_and_field(runs: Runs, tmp_path: Path) -> None:
    run = _copy(runs.ar, tmp_path)
    data = json.loads(RunFolder(run).summary_file.read_text())
    data["levels"][1]["output_throughput"] = "fast"
    RunFolder(run).summary_file.write_text(json.dumps(data))
    with pytest.raises(RunRecordError) as err:
        load_run(run)
    assert str(RunFolder(run).summary_file) in err.value.message
    assert "levels[1].output_throughput" in err.value.message


def test_corrupt_jsonl_line_names_file_and_line(runs: Runs, tmp_path: Path) -> None:
    run_dir = _copy(runs.ar, tmp_path)
    path = RunFolder(run_dir).requests_file(1, 0)
    path.write_text(path.read_text() + '{"concurrency": 1}\n')
    run = load_run(run_dir)
    with pytest.raises(RunRecordError) as err:
        run.requests(1, 0)
    assert f"{path}:" in err.value.message


def test_cli_reports_a_missing_run_without_traceback(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", str(tmp_path / "nope")])
    assert result.exit_code == 1
    assert "no such run record folder" in result.output
    assert "Traceback" not in result.output


def test_spec_models_dump_the_files_unchanged(runs: Runs) -> None:
    """The writers dump these models: validating a written file and dumping it gives it back."""
    folder = RunFolder(runs.dflash)
    files = {
        folder.summary_file: Summary,
        folder.accept_file: AcceptResults,
        folder.server_info_file: ServerInfo,
        folder.machine_file: MachineInfo,
    }
    for path, model in files.items():
        data = json.loads(path.read_text())
        assert model.model_validate(data).model_dump(mode="json", exclude_unset=True) == data
    data = json.loads(RunFolder(runs.dflash).run_file.read_text())
    assert BenchRunInfo.model_validate(data).model_dump(mode="json") == data
    for row in jsonl_rows(runs.dflash, 1, 0):
        assert RequestRow.model_validate(row).model_dump(mode="json") == row


def test_loads_a_record_without_newer_keys(runs: Runs, tmp_path: Path) -> None:
    """run.json without kind/slos, summary.json without spread: still a bench record."""
    run_dir = _copy(runs.ar, tmp_path)
    meta = json.loads(RunFolder(run_dir).run_file.read_text())
    del meta["kind"], meta["slos"]
    RunFolder(run_dir).run_file.write_text(json.dumps(meta))
    summary = json.loads(RunFolder(run_dir).summary_file.read_text())
    RunFolder(run_dir).summary_file.write_text(json.dumps({"levels": summary["levels"]}))
    run = load_run(run_dir)
    assert run.run.kind == "bench" and run.concurrencies == [1, 4]


def _as_real_engine(run: Path, dest: Path) -> Path:
    """The record as SGLang's own engine writes it: not simulated, its version reported."""
    copy = shutil.copytree(run, dest)
    info = json.loads(RunFolder(copy).server_info_file.read_text())
    info = {k: v for k, v in info.items() if not k.startswith("sim_")}
    info.update(simulated=False, version="0.5.23")
    RunFolder(copy).server_info_file.write_text(json.dumps(info))
    record = json.loads(RunFolder(copy).run_file.read_text())
    record["simulated"] = False
    RunFolder(copy).run_file.write_text(json.dumps(record))
    shutil.rmtree(RunFolder(copy).accept.path, ignore_errors=True)
    return copy


def test_every_report_names_the_engine(runs: Runs, tmp_path: Path) -> None:
    real = _as_real_engine(runs.ar, tmp_path / "demo-real")
    run = load_run(real)
    assert not run.simulated and run.machine_class == "no GPUs, SGLang 0.5.23"
    for fmt in ("table", "markdown", "html"):
        out = tmp_path / f"report.{fmt}"
        shown = CliRunner().invoke(main, ["report", str(real), "--format", fmt, "-o", str(out)])
        assert shown.exit_code == 0, shown.output
        assert "SGLang 0.5.23" in out.read_text(), fmt
