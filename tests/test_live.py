"""The launch spinner's line: one console line whatever the server logs."""

from __future__ import annotations

import io

from rich.console import Console

from repro.live import status_line


def test_a_long_log_line_is_cut_to_one_line_and_brackets_stay_text() -> None:
    log = "[2026-12-03 09:00:00 TP0] Load weight begin. " + "x" * 300 + " [/dim]"
    for width in (80, 200):
        out = io.StringIO()
        console = Console(file=out, width=width, color_system=None)
        console.print(status_line(console, "kimi: starting, 12 s", log))
        [line] = out.getvalue().splitlines()
        assert len(line) <= width - 4
        assert line.startswith("kimi: starting, 12 s [2026-12-03 09:00:00 TP0] Load weight")
        assert line.endswith("…")


def test_a_narrow_console_shows_the_state_alone() -> None:
    console = Console(file=io.StringIO(), width=24)
    assert status_line(console, "kimi: starting, 12 s", "[x] loading") == "kimi: starting, 12 s"
