"""Run folders written by earlier repro versions still load, list and report (see
tests/fixtures/earlier-runs/README.md for how each was written)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from repro.cli import main
from repro.report import load_run
from repro.run.listing import list_runs
from repro.runfolder import RunFolder
from repro.schema.level import closed
from repro.schema.record import AcceptWorkload, BenchRunInfo

EARLIER = Path(__file__).parents[1] / "fixtures" / "earlier-runs"


def test_a_first_format_bench_record_loads_with_its_old_meanings() -> None:
    run = load_run(EARLIER / "v1-bench")
    assert isinstance(run.run, BenchRunInfo) and run.recipe_name == "demo"
    assert run.concurrencies == [1, 2]  # `concurrency` was the configured level
    assert all(level.valid for level in run.levels)  # written before the verdict existed
    assert run.points("output_throughput")[closed(2)].values[0] > 0
    assert run.hardware_class == "no GPUs" and run.simulated
    assert len(run.requests(2, 0)) == 2


def test_a_first_format_accept_record_loads_its_template_as_text() -> None:
    run = load_run(EARLIER / "v1-accept")
    assert isinstance(run.run.workload, AcceptWorkload)
    assert run.run.workload.chat_template == "built-in ChatML"
    assert run.accept is not None and [s.prompt_set for s in run.accept.sets] == ["math"]
    assert run.levels == []


def test_an_earlier_repro_run_folder_loads_its_parts() -> None:
    folder = EARLIER / "v2-run"
    run = load_run(folder)
    assert run.path == RunFolder(folder).bench.path and run.run_name == "v2-run"
    assert run.accept is not None and run.accept.sets  # accept/ joined to bench/
    assert run.machine is not None and run.concurrencies == [1, 2]
    context = RunFolder(folder).read_context()
    assert context.ref == "demo" and context.port == 30000
    stages = RunFolder(folder).read_stages()
    assert stages is not None and all(stage.status == "done" for stage in stages.stages)


def test_earlier_folders_list_and_report() -> None:
    listed = {Path(r.folder).name: r for r in list_runs(EARLIER)}
    assert {name: r.status for name, r in listed.items()} == {
        "v1-accept": "done", "v1-bench": "done", "v2-run": "done",
    }  # fmt: skip
    assert all(r.recipe == "demo" and r.machine != "unreadable" for r in listed.values())
    folders = [str(EARLIER / name) for name in ("v1-bench", "v2-run")]
    result = CliRunner().invoke(main, ["report", *folders])
    assert result.exit_code == 0, result.output
    compared = CliRunner().invoke(main, ["compare", *folders])
    assert compared.exit_code == 0, compared.output
