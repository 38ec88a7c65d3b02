"""`RunFolder`: one model per file, written as read, and the one rule for which record a path
names (report, compare and `repro runs` all go through it)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from repro.runfolder import RunFolder, RunRecordError, record_folder

EARLIER = Path(__file__).parent / "fixtures" / "earlier-runs"


def test_every_file_is_written_as_it_was_read(tmp_path: Path) -> None:
    """What a resume or a campaign rewrites keeps every key, in whatever format it was."""
    source = RunFolder(EARLIER / "v2-run")
    copy = RunFolder(tmp_path / "copy")
    for part, into in ((source.bench, copy.bench), (source.accept, copy.accept)):
        into.write_run(part.read_run())
        into.write_recipe(part.read_recipe())
        into.write_summary(part.read_summary())
        machine, info = part.read_machine(), part.read_server_info()
        assert machine is not None and info is not None
        into.write_machine(machine)
        into.write_server_info(info)
    accept = source.accept.read_accept()
    assert accept is not None
    copy.accept.write_accept(accept)
    copy.write_context(source.read_context())
    stages = source.read_stages()
    assert stages is not None
    copy.write_stages(stages)
    for name in ("machine_file", "server_info_file", "recipe_file"):
        original = json.loads(getattr(source.bench, name).read_text())
        assert json.loads(getattr(copy.bench, name).read_text()) == original
    assert copy.read_context() == source.read_context()
    assert copy.bench.read_run() == source.bench.read_run()
    assert copy.accept.read_accept() == accept


def test_the_record_a_path_names(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(EARLIER / "v2-run", run)
    folder = RunFolder(run)
    assert record_folder(run) == folder.bench  # a `repro run` folder: its bench part
    assert record_folder(folder.bench.run_file) == folder.bench  # a run.json: its folder
    assert folder.bench.pipeline() == folder and RunFolder(EARLIER / "v1-bench").pipeline() is None
    shutil.rmtree(folder.bench.path)  # a run stopped before its bench: the accept part
    assert record_folder(run) == folder.accept and folder.record_part() == folder.accept
    shutil.rmtree(folder.accept.path)  # no record at all: the folder itself, read as one
    assert folder.record_part() is None
    with pytest.raises(RunRecordError, match=re.escape(f"{folder.run_file}: missing")):
        record_folder(run).read_run()
    with pytest.raises(RunRecordError, match="no such run record folder"):
        record_folder(tmp_path / "nope")


def test_an_edited_file_is_one_line_naming_the_field_the_expectation_and_the_value(
    tmp_path: Path,
) -> None:
    """Every file's bad value reads the same: path, field, what was expected, what was found."""
    run = tmp_path / "run"
    shutil.copytree(EARLIER / "v2-run", run)
    folder = RunFolder(run)
    context = json.loads(folder.context_file.read_text())
    folder.context_file.write_text(json.dumps({**context, "port": 99999}))
    with pytest.raises(RunRecordError) as caught:
        folder.read_context()
    assert caught.value.message == (
        f"{folder.context_file}: not a run context: port: expected a value <= 65535, got 99999"
    )
    stages = json.loads(folder.stages_file.read_text())
    stages["stages"][1]["seconds"] = "soon"
    folder.stages_file.write_text(json.dumps(stages))
    with pytest.raises(RunRecordError) as caught:
        folder.read_stages()
    assert caught.value.message.endswith("stages[1].seconds: expected a number, got 'soon'")
