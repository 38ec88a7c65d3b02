"""Text from a server or a file reaches the terminal, a report or an HTML page cleaned: no
terminal escape sequence (window title, screen clear) or control character, no 10 MB line,
and a refused `--registry user:password@...` never echoes the password."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from repro.runfolder import RunFolder
from tests.faults.hostile_server import json_server
from tests.support.cli import isolated_env, repro

RETITLE_AND_CLEAR = "\x1b]0;pwned\x07\x1b[2J\x1b[H\x9b31m"
HUGE = "M" * 10_000_000
RECORD = Path(__file__).resolve().parent.parent / "fixtures" / "h200-sglang-0.5.23" / "bench-chat"
LONGEST_LINE = 2200  # repro.safetext.MAX_CHARS and the note of what was cut


def _shown_clean(text: str) -> None:
    for char in ("\x1b", "\x07", "\x9b"):
        assert char not in text, repr(text[:300])
    assert max(len(line) for line in text.splitlines()) < LONGEST_LINE


@pytest.mark.parametrize("field", ["model_path", "served_model_name"])
def test_a_server_naming_its_model_with_escapes_and_megabytes(
    field: str, tmp_path: Path, repo_root: Path
) -> None:
    info = {"version": "0.5.23", "model_path": "x", field: RETITLE_AND_CLEAR + HUGE}
    with json_server({"/server_info": info, "/flush_cache": {}}) as url:
        for command in (["bench", "demo"], ["accept", "demo"]):
            out = tmp_path / command[0]
            result = repro(
                *command, "--url", url, "--output", str(out), cwd=repo_root,
                env=isolated_env(tmp_path), timeout=120,
            )  # fmt: skip
            assert result.returncode == 1, result.stderr[:500]
            assert "Traceback" not in result.stderr
            assert result.stderr.startswith("error: ")
            _shown_clean(result.stdout + result.stderr)


def test_a_registry_password_is_never_echoed(tmp_path: Path, repo_root: Path) -> None:
    env = isolated_env(tmp_path)
    assert repro("lock", "demo", cwd=repo_root, env=env, timeout=120).returncode == 0
    for registry in ("alice:S3cretPw@127.0.0.1:5000/team", "https://alice:S3cretPw@reg/ns"):
        result = repro("image", "push", "demo", "--registry", registry, cwd=repo_root, env=env)
        assert result.returncode != 0
        assert "S3cretPw" not in result.stdout + result.stderr
        error = result.stderr.splitlines()[0]
        assert "a user and password before the host are not accepted" in error


def test_a_record_with_hostile_text_is_reported_clean(tmp_path: Path) -> None:
    record = tmp_path / "bench-chat"
    shutil.copytree(RECORD, record)
    info = json.loads(RunFolder(record).server_info_file.read_text())
    info["model_path"] = RETITLE_AND_CLEAR + "x" * 100_000
    RunFolder(record).server_info_file.write_text(json.dumps(info))
    machine = json.loads(RunFolder(record).machine_file.read_text())
    machine["gpus"][0]["name"] = RETITLE_AND_CLEAR + "H200"
    RunFolder(record).machine_file.write_text(json.dumps(machine))
    summary = json.loads(RunFolder(record).summary_file.read_text())
    summary["levels"][0].update(valid=False, reasons=[RETITLE_AND_CLEAR + "slow"])
    RunFolder(record).summary_file.write_text(json.dumps(summary))
    for fmt in ("table", "markdown", "html"):
        result = repro(
            "report", str(record), "--format", fmt, "--include-invalid", cwd=tmp_path,
            env=isolated_env(tmp_path), timeout=120,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        _shown_clean(result.stdout + result.stderr)
    listing = repro("runs", "--runs-dir", str(tmp_path), cwd=tmp_path, env=isolated_env(tmp_path))
    assert listing.returncode == 0 and "bench-chat" in listing.stdout, listing.stderr
    _shown_clean(listing.stdout + listing.stderr)
