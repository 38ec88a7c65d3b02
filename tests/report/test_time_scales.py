"""Runs simulated at different time scales are never compared as equals: compare and every
report format refuse with one line naming each run's scale."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.runfolder import RunFolder
from tests.report.conftest import Runs


def _at_scale(run: Path, dest: Path, scale: float) -> Path:
    """The same record as the simulator writes it for a server started at `scale`."""
    copy = shutil.copytree(run, dest)
    info_path = RunFolder(copy).server_info_file
    info = json.loads(info_path.read_text())
    assert info["simulated"] is True
    info["sim_time_scale"] = scale
    info_path.write_text(json.dumps(info))
    return copy


def test_compare_refuses_two_time_scales(runs: Runs, tmp_path: Path) -> None:
    fast = _at_scale(runs.dflash, tmp_path / "fast", 0.1)
    result = CliRunner().invoke(main, ["compare", str(runs.dflash), str(fast)])
    assert result.exit_code == 1, result.output
    assert "simulated at different time scales" in result.output
    assert "at 0.1" in result.output and "at 1" in result.output
    assert "Traceback" not in result.output and "10." not in result.output
    same = _at_scale(runs.dflash, tmp_path / "same", 1.0)
    assert CliRunner().invoke(main, ["compare", str(runs.dflash), str(same)]).exit_code == 0


@pytest.mark.parametrize("fmt", ["table", "markdown", "json", "html"])
def test_report_refuses_mixed_time_scales(runs: Runs, tmp_path: Path, fmt: str) -> None:
    fast = _at_scale(runs.ar, tmp_path / "fast", 0.1)
    out, plots = tmp_path / "report.out", tmp_path / "plots"
    args = ["report", str(runs.dflash), str(fast), "--format", fmt, "--output", str(out)]
    result = CliRunner().invoke(main, [*args, "--plots", str(plots)])
    assert result.exit_code == 1, result.output
    assert "simulated at different time scales" in result.output
    assert not out.exists() and not plots.exists()  # no half-written report
