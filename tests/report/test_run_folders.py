"""`repro report` and `repro compare` take a `repro run` folder and label runs apart."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from repro.campaign.folder import CampaignFolder
from repro.cli import main
from repro.report import load_runs
from repro.runfolder import RunFolder
from repro.schema.campaign import CampaignIndex, PointState
from tests.report.conftest import Runs


def _run_folder(bench: Path, dest: Path, started_at: str) -> Path:
    """A `repro run` folder laid out as the pipeline writes it: bench/, accept/, stages.json."""
    folder = RunFolder(dest)
    shutil.copytree(bench, folder.bench.path)
    run_json = folder.bench.run_file
    data = json.loads(run_json.read_text())
    data.update(run_id="bench", started_at=started_at)
    run_json.write_text(json.dumps(data))
    accept = folder.bench.accept_file
    folder.accept.path.mkdir()
    if accept.exists():
        accept.rename(folder.accept.accept_file)
    folder.stages_file.write_text(json.dumps({"updated_at": started_at, "stages": []}))
    return dest


def test_run_folders_compare_and_report_with_distinct_labels(runs: Runs, tmp_path: Path) -> None:
    a = _run_folder(runs.dflash, tmp_path / "20261203T075300Z-demo", "2026-12-03T07:53:00Z")
    b = _run_folder(runs.dflash, tmp_path / "20261203T081000Z-demo", "2026-12-03T08:10:00Z")
    run_a, run_b = load_runs([a, b])
    assert run_a.path == RunFolder(a).bench.path and run_a.run_name == a.name
    assert run_a.accept is not None and run_a.accept.sets  # accept/ joined to bench/
    assert run_a.label != run_b.label
    assert "12-03 07:53" in run_a.label and "12-03 08:10" in run_b.label
    cli = CliRunner()
    result = cli.invoke(main, ["compare", str(a), str(b), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["a_label"] == run_a.label and data["b_label"] == run_b.label
    result = cli.invoke(main, ["report", str(a), str(b), "--format", "json"])
    assert result.exit_code == 0, result.output
    labels = [row["label"] for row in json.loads(result.output)["rows"]]
    assert labels == [run_a.label, run_b.label]


def test_same_time_falls_back_to_machine_then_folder(runs: Runs, tmp_path: Path) -> None:
    a = _run_folder(runs.dflash, tmp_path / "first", "2026-12-03T07:53:00Z")
    b = _run_folder(runs.dflash, tmp_path / "second", "2026-12-03T07:53:00Z")
    labels = [r.label for r in load_runs([a, b, a])]
    assert labels[0] != labels[1] and labels[0] == labels[2]  # a folder given twice: one label
    assert labels[0].endswith("first") and labels[1].endswith("second")


def test_a_folder_without_records_names_what_it_wanted(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert result.exit_code != 0
    assert "run.json: missing" in result.output and "repro run" in result.output


def test_repro_runs_lists_recipe_machine_and_status(runs: Runs, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    done = _run_folder(runs.dflash, root / "20261203T075300Z-demo", "2026-12-03T07:53:00Z")
    failed = _run_folder(runs.ar, root / "20261203T081000Z-demo-ar", "2026-12-03T08:10:00Z")
    stages = [{"name": "doctor", "status": "done"}, {"name": "bench", "status": "failed"}]
    RunFolder(failed).stages_file.write_text(json.dumps({"updated_at": "x", "stages": stages}))
    (root / "notes").mkdir()  # not a run: left out
    campaign = _campaign_folder(root / "campaigns" / "20261203T090000Z-caps")
    result = CliRunner().invoke(main, ["runs", "--runs-dir", str(root), "--json"])
    assert result.exit_code == 0, result.output
    listed = json.loads(result.output)
    assert [(r["recipe"], r["machine"], r["status"]) for r in listed["runs"]] == [
        ("demo-dflash", "sim demo, time-scale 1", "done"),
        ("demo-ar", "sim demo, time-scale 1", "failed at bench"),
    ]
    assert listed["runs"][0]["folder"] == str(done)
    assert listed["campaigns"] == [
        {
            "folder": str(campaign),
            "campaign": "caps",
            "machine": "this-box, SIMULATED (time-scale 1)",
            "status": "1 of 3 done, 1 failed, 1 pending",
        }
    ]


def _campaign_folder(path: Path) -> Path:
    """A campaign folder as `repro campaign run` leaves it part-way: one point of each state."""
    folder = CampaignFolder(path)
    path.mkdir(parents=True)
    folder.plan_file.write_text("{}")  # listed by its index: the plan is not read
    states = [
        PointState(name=n, status=s) for n, s in (("a", "done"), ("b", "failed"), ("c", "pending"))
    ]
    folder.write_index(
        CampaignIndex(
            campaign="caps", machine="this-box", simulated=True, time_scale=1.0, points=states
        )
    )
    return path


def test_repro_runs_reads_at_80_columns_and_names_an_interruption(
    runs: Runs, tmp_path: Path
) -> None:
    root = tmp_path / "runs"
    for i in range(6):  # folders named as `repro run` names them: time, then recipe
        _run_folder(runs.dflash, root / f"2026120{i}T075300Z-demo-dflash", "2026-12-03T07:53:00Z")
    stopped = _run_folder(runs.ar, root / "20261207T081000Z-demo-ar", "2026-12-03T08:10:00Z")
    stages = [
        {"name": "doctor", "status": "done"},
        {"name": "bench", "status": "failed", "summary": "interrupted (SIGINT)"},
    ]
    RunFolder(stopped).stages_file.write_text(json.dumps({"updated_at": "x", "stages": stages}))
    _campaign_folder(root / "campaigns" / "20261203T090000Z-caps")
    result = CliRunner().invoke(main, ["runs", "--runs-dir", str(root)], terminal_width=80)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    runs_part = result.output.split("campaigns in")[0].splitlines()
    assert len(runs_part) <= 7 + 5  # one line per run, a title and a header
    assert "recipe" not in lines[2]  # the folder names say it
    assert "interrupted at bench" in result.output
    assert "20261203T090000Z-caps" in result.output and "1 of 3 done, 1 failed" in result.output
