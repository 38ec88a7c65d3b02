"""write_atomic: a reader sees the old file or the new one, never a part, and no temp file."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from repro.fsutil import write_atomic


def test_writes_text_and_bytes_with_the_given_mode(tmp_path: Path) -> None:
    text, blob = tmp_path / "sub" / "a.txt", tmp_path / "b.bin"
    write_atomic(text, "naïve\n")
    write_atomic(blob, b"\x00\xff", mode=0o600)
    assert text.read_bytes() == "naïve\n".encode()
    assert blob.read_bytes() == b"\x00\xff"
    assert stat.S_IMODE(text.stat().st_mode) == 0o644
    assert stat.S_IMODE(blob.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a.txt", "b.bin", "sub"]


def test_a_write_that_fails_midway_keeps_the_old_file_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    path.write_text("old\n")
    with pytest.raises(UnicodeEncodeError):
        write_atomic(path, "new \udc80 text")  # a lone surrogate has no UTF-8 encoding
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_a_rename_that_fails_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "page.html"
    target.mkdir()  # a directory where the file should go: the final rename fails
    (target / "kept").write_text("x")
    with pytest.raises(IsADirectoryError):
        write_atomic(target, "<html></html>")
    assert [p.name for p in tmp_path.iterdir()] == ["page.html"]
    assert [p.name for p in target.iterdir()] == ["kept"]
