"""Live displays shared by the standalone commands and `repro run`'s stages, so a sweep or a
server start looks the same whichever started it.

    with sweep_bars(console) as observer:
        run_bench(target, options, observer)

On a terminal each level (and its warm-up) is a bar with its elapsed and remaining time; with
no terminal (`| tee`, CI) each prints a plain line when it starts and when it ends, so a log
shows progress as it happens.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from repro.safetext import clean
from repro.schema.level import Level, Load, as_load

# What a spinner line needs besides its text: the spinner, a space, and a margin.
_SPINNER_WIDTH = 4


class SweepBars:
    """A sweep's observer (`repro.bench.sweep.SweepObserver`): one bar per level, its
    description replaced by the level's throughput when it is done."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.task: Any = None
        self.warmup: Any = None

    def warmup_started(self, load: Load | int, repeat: int, total: int) -> None:
        self.warmup = self.task = self.progress.add_task(
            f"{as_load(load).label} rep={repeat} warm-up", total=total
        )

    def level_started(self, load: Load | int, repeat: int, total: int) -> None:
        if self.warmup is not None:  # done: its bar makes room for the level's
            self.progress.remove_task(self.warmup)
            self.warmup = None
        self.task = self.progress.add_task(f"{as_load(load).label} rep={repeat}", total=total)

    def request_done(self, result: object) -> None:
        self.progress.update(self.task, advance=1)

    def level_done(self, summary: Level) -> None:
        self.progress.update(
            self.task,
            description=f"{summary.load.label} rep={summary.repeat} "
            f"{summary.output_throughput:.0f} tok/s, {summary.failed} failed"
            + ("" if summary.valid else ", INVALID"),
        )


class SweepLines:
    """A sweep's observer for a log: a plain line as each warm-up and level starts and ends."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.started = 0.0

    def _line(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False, soft_wrap=True)

    def warmup_started(self, load: Load | int, repeat: int, total: int) -> None:
        self._line(f"{as_load(load).label} rep={repeat}: warm-up, {total} requests")

    def level_started(self, load: Load | int, repeat: int, total: int) -> None:
        self.started = time.monotonic()
        self._line(f"{as_load(load).label} rep={repeat}: {total} requests")

    def request_done(self, result: object) -> None:
        pass

    def level_done(self, summary: Level) -> None:
        verdict = "valid" if summary.valid else "INVALID: " + "; ".join(summary.reasons)
        self._line(
            f"{summary.load.label} rep={summary.repeat}: done in "
            f"{time.monotonic() - self.started:.1f} s, {summary.output_throughput:.0f} tok/s, "
            f"{summary.failed} failed, {verdict}"
        )


@contextmanager
def sweep_bars(console: Console) -> Iterator[SweepBars | SweepLines]:
    """Per-level progress bars on `console` (kept on screen when the sweep ends), or plain
    lines when `console` is not a terminal."""
    if not console.is_terminal:
        yield SweepLines(console)
        return
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    ) as progress:
        yield SweepBars(progress)


def status_line(console: Console, prefix: str, detail: str) -> str:
    """`prefix` then `detail` dimmed, as spinner markup that fits on one line of the console:
    a server's log line is cut to the width left, never wrapped or re-printed
    each frame, and its brackets are escaped so they are not read as markup."""
    room = console.width - len(prefix) - _SPINNER_WIDTH - 1
    flat = " ".join(clean(detail).split())
    if room < 8 or not flat:
        return escape(prefix)
    if len(flat) > room:
        flat = flat[: room - 1] + "…"
    return f"{escape(prefix)} [dim]{escape(flat)}[/]"
