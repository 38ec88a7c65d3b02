"""The launch spinner's line: one console line whatever the server logs."""

from __future__ import annotations

import io

from rich.console import Console

from repro.live import SweepBars, SweepLines, status_line, sweep_bars


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


def test_sweep_bars_on_a_terminal_show_the_warm_up_and_an_eta() -> None:
    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=True, color_system=None)
    with sweep_bars(console) as bars:
        assert isinstance(bars, SweepBars)
        bars.warmup_started(4, 0, 2)
        shown = [t.description for t in bars.progress.tasks]
        assert shown == ["c=4 rep=0 warm-up"]
        bars.level_started(4, 0, 8)
        bars.request_done(None)
        assert [t.description for t in bars.progress.tasks] == ["c=4 rep=0"]  # warm-up gone
    assert "eta" in out.getvalue()


def test_sweep_without_a_terminal_prints_plain_lines() -> None:
    out = io.StringIO()
    console = Console(file=out, width=80)  # a file: no terminal
    with sweep_bars(console) as lines:
        assert isinstance(lines, SweepLines)
        lines.warmup_started(1, 0, 2)
        lines.level_started(1, 0, 8)
    lines = out.getvalue().splitlines()
    assert lines == ["c=1 rep=0: warm-up, 2 requests", "c=1 rep=0: 8 requests"]
