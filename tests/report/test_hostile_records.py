"""`repro report` and `repro compare` on records nobody should trust: a label is drawn as the
text it is (no mathtext) and shortened, and a file that is not UTF-8 or nested absurdly deep
is one error line naming it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.runfolder import RunFolder

from .conftest import Runs


def _copy(src: Path, tmp_path: Path, name: str | None = None) -> Path:
    dest = tmp_path / (name or src.name)
    shutil.copytree(src, dest)
    return dest


def _rename(run: Path, name: str) -> None:
    data = json.loads(RunFolder(run).run_file.read_text())
    data["recipe_name"] = name
    RunFolder(run).run_file.write_text(json.dumps(data))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", ["$\\frac{1}{$", "x" * 1_000_000, "a$b$c_{d}^e \\alpha"])
def test_hostile_labels_are_drawn_literally_and_short(
    runs: Runs, tmp_path: Path, name: str
) -> None:
    run = _copy(runs.dflash, tmp_path)
    _rename(run, name)
    html = tmp_path / "page.html"
    plots = tmp_path / "plots"
    result = CliRunner().invoke(
        main, ["report", str(run), "--format", "html", "-o", str(html), "--plots", str(plots)]
    )
    assert result.exit_code == 0, result.output
    assert {p.name for p in plots.iterdir()} >= {"throughput.png", "pareto.png"}
    text = html.read_text()
    assert len(text) < 2_000_000  # the label is shortened, not repeated in full
    if len(name) < 60:
        assert name.replace("&", "&amp;") in text.replace("&#36;", "$")
    compared = CliRunner().invoke(main, ["compare", str(run), str(runs.dflash)])
    assert compared.exit_code == 0, compared.output


@pytest.mark.parametrize("file", ["run_file", "summary_file", "recipe_file"])
def test_a_latin1_byte_is_one_error_line(runs: Runs, tmp_path: Path, file: str) -> None:
    run = _copy(runs.ar, tmp_path)
    path: Path = getattr(RunFolder(run), file)
    path.write_bytes(path.read_bytes().replace(b'"', b'"\xe9', 1))
    for command in (["report", str(run)], ["compare", str(run), str(runs.ar)]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 1, result.output
        assert f"{path.name}: not UTF-8 text (byte 0xe9" in result.output
        assert "Traceback" not in result.output


@pytest.mark.parametrize("file", ["run_file", "summary_file", "server_info_file"])
def test_a_record_nested_200000_deep_is_one_error_line(
    runs: Runs, tmp_path: Path, file: str
) -> None:
    run = _copy(runs.ar, tmp_path)
    path: Path = getattr(RunFolder(run), file)
    path.write_text("[" * 200_000 + "]" * 200_000)
    result = CliRunner().invoke(main, ["report", str(run)])
    assert result.exit_code == 1, result.output
    assert f"{path.name}: nested deeper than" in result.output
