"""Bad input to `repro run` and `repro launch`: one clear line naming the file or value, never
a traceback, never a plan for a recipe `repro recipe check` rejects."""

from __future__ import annotations

import json
import os
import subprocess
from contextlib import suppress
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from repro.cli import main
from repro.runfolder import RunFolder
from tests.support.cli import REPRO


def _refused(result: Result) -> str:
    """The error text of a refused call (exit 1 or 2, a SystemExit: no exception escaped)."""
    assert result.exit_code in (1, 2), result.output
    assert isinstance(result.exception, SystemExit), result.exception
    return result.output


@pytest.fixture
def run_dir(repo_root: Path, tmp_path: Path) -> Path:
    """A run folder as `repro run` leaves it before its first stage."""
    folder = tmp_path / "run"
    folder.mkdir()
    context = {"ref": str(repo_root / "recipes" / "demo.yaml"), "lock_path": None, "port": None}
    RunFolder(folder).context_file.write_text(json.dumps(context))
    RunFolder(folder).stages_file.write_text(json.dumps({"updated_at": "x", "stages": []}))
    return folder


@pytest.mark.parametrize("content", ["", '{"ref": "de', "{}", "[1, 2]", '{"ref": 5}'])
@pytest.mark.parametrize("name", ["context_file", "stages_file"])
def test_resume_names_a_corrupt_state_file(run_dir: Path, name: str, content: str) -> None:
    path: Path = getattr(RunFolder(run_dir), name)
    path.write_text(content)
    result = CliRunner().invoke(main, ["run", "--resume", str(run_dir), "--dry-run"])
    if name == "stages_file" and content == '{"ref": 5}':
        assert path.name in _refused(result)  # not a stages file either
        return
    output = _refused(result)
    assert path.name in output and "Traceback" not in output


def test_resume_refuses_a_folder_that_is_no_run(tmp_path: Path, fixtures_dir: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "not a `repro run` folder" in _refused(
        CliRunner().invoke(main, ["run", "--resume", str(empty)])
    )
    bench = tmp_path / "benched"
    bench.mkdir()
    RunFolder(bench).run_file.write_text(json.dumps({"kind": "bench", "status": "complete"}))
    refused = _refused(CliRunner().invoke(main, ["run", "--resume", str(bench)]))
    assert RunFolder(bench).context_file.name in refused


@pytest.mark.parametrize("port", ["0", "-1", "99999"])
def test_ports_out_of_range_are_usage_errors(repo_root: Path, port: str) -> None:
    demo = str(repo_root / "recipes" / "demo.yaml")
    for args in (["run", demo, "--dry-run", "--port", port], ["launch", demo, "--port", port]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2 and "1<=x<=65535" in result.output, result.output


def test_render_and_dry_run_refuse_what_check_rejects(repo_root: Path, tmp_path: Path) -> None:
    (tmp_path / "images").symlink_to(repo_root / "images")
    (tmp_path / "recipes").mkdir()
    lines = (repo_root / "recipes" / "demo.yaml").read_text().splitlines(keepends=True)
    start = lines.index("drafter:\n")
    no_drafter = tmp_path / "recipes" / "no-drafter.yaml"
    no_drafter.write_text("".join(lines[:start] + lines[start + 3 :]))
    check = CliRunner().invoke(main, ["recipe", "check", "--no-engine", str(no_drafter)])
    assert check.exit_code == 1 and "needs a drafter" in check.output
    for args in (["recipe", "render", str(no_drafter)], ["run", str(no_drafter), "--dry-run"]):
        assert "needs a drafter" in _refused(CliRunner().invoke(main, args))


def test_a_refused_simulated_plan_leaves_no_folder(repo_root: Path, tmp_path: Path) -> None:
    (tmp_path / "images").symlink_to(repo_root / "images")
    (tmp_path / "recipes").mkdir()
    for name in ("kimi26-tp8.yaml", "kimi26-ep4.yaml"):
        (tmp_path / "recipes" / name).write_text((repo_root / "recipes" / name).read_text())
    bad = tmp_path / "recipes" / "bad.yaml"
    bad.write_text("extends: kimi26-ep4.yaml\nspeculative: {algorithm: DFLASH}\n")
    runs = tmp_path / "runs"
    args = ["run", str(bad), "--sim", "--dry-run", "--runs-dir", str(runs)]
    assert "needs a drafter" in _refused(CliRunner().invoke(main, args))
    assert not runs.exists()  # neither the simulated twin's run folder nor runs/


@pytest.mark.docker  # a dry run asks the engine which image it would run
def test_dry_run_shows_markup_and_emoji_codes_literally(repo_root: Path, tmp_path: Path) -> None:
    runs = tmp_path / "[red]x[/] :-1:"
    demo = str(repo_root / "recipes" / "demo.yaml")
    result = CliRunner().invoke(main, ["run", demo, "--dry-run", "--runs-dir", str(runs)])
    assert result.exit_code == 0, result.output
    shown = result.output.replace("\n", "")  # long paths wrap
    assert "[red]x[/] :-1:" in shown and "👎" not in shown


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_full_disk_is_one_line_and_leaves_no_temp_file(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", disk], check=True)
    try:
        with suppress(OSError), (disk / "filler").open("wb", buffering=0) as filler:
            while True:
                filler.write(b"\0" * 4096)
        monkeypatch.setenv("REPRO_LOCKS_DIR", str(disk / "locks"))
        for args in (["run", "demo", "--runs-dir", str(disk / "runs")], ["lock", "demo"]):
            result = subprocess.run(
                [REPRO, *args], cwd=repo_root, capture_output=True, text=True, timeout=120
            )
            assert result.returncode == 1, result.stderr
            errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
            assert errors == [errors[0]] and "No space left on device" in errors[0]
            assert "Traceback" not in result.stderr
        assert not list(disk.rglob("*.tmp"))
    finally:
        subprocess.run(["umount", disk], check=True)


@pytest.mark.docker  # a dry run asks the engine which image it would run
def test_resume_honours_a_new_port(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPRO_STATE_DIR", str(run_dir / "state"))
    args = ["run", "--resume", str(run_dir), "--port", "4321", "--dry-run"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "127.0.0.1:4321:" in result.output


DEEP = "[" * 100_000 + "]" * 100_000


def _one_line(result: Result, *words: str) -> None:
    error = _refused(result).strip().splitlines()[0]
    assert error.startswith("error: "), result.output
    for word in words:
        assert word in error, error


@pytest.mark.parametrize("name", ["context_file", "stages_file"])
@pytest.mark.parametrize(
    ("content", "words"),
    [(DEEP.encode(), "nested deeper"), (b'{"ref": "d\xe9mo"}', "not UTF-8 text (byte 0xe9")],
    ids=["deep", "latin1"],
)
def test_resume_of_hostile_run_state(run_dir: Path, name: str, content: bytes, words: str) -> None:
    path: Path = getattr(RunFolder(run_dir), name)
    path.write_bytes(content)
    result = CliRunner().invoke(main, ["run", "--resume", str(run_dir), "--dry-run"])
    _one_line(result, path.name, words)


def test_resume_of_a_saved_port_99999(run_dir: Path) -> None:
    context = json.loads(RunFolder(run_dir).context_file.read_text())
    RunFolder(run_dir).context_file.write_text(json.dumps({**context, "port": 99999}))
    result = CliRunner().invoke(main, ["run", "--resume", str(run_dir), "--dry-run"])
    _one_line(result, RunFolder(run_dir).context_file.name, "port", "99999")
