"""The bench run record (docs/run-record.md): levels appended one finished level at a time, so
that a crashed run keeps what it finished and `--resume` continues it. The folder's files, their
names and models are `repro.runfolder.RunFolder`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from repro import fileread
from repro.bench.metrics import spread
from repro.runfolder import RunFolder, RunRecordError, utc_now
from repro.schema.level import Level, Load, RequestRow, Summary
from repro.schema.record import BenchRunInfo, RunStatus
from repro.schema.server import MetricsSample


class RunWriter:
    """Writes one bench run folder; `run` is run.json, `levels` summary.json's finished levels."""

    def __init__(self, run_dir: Path, run: BenchRunInfo, levels: list[Level]):
        self.dir = run_dir
        self.folder = RunFolder(run_dir)
        self.run = run
        self.levels = levels

    # ---- create / resume ------------------------------------------------------------------
    @classmethod
    def create(cls, run_dir: Path, run: BenchRunInfo) -> RunWriter:
        writer = cls(run_dir, run, [])
        writer.save_run()
        return writer

    @classmethod
    def open(cls, run_dir: Path) -> RunWriter:
        """An existing run, for --resume: finished levels come from summary.json."""
        folder = RunFolder(run_dir)
        if not run_dir.is_dir():
            raise RunRecordError(
                f"{run_dir} is not a run directory", hint="pass a folder under runs/"
            )
        for entry in [folder.levels_dir, *run_dir.iterdir()]:
            if not fileread.within(entry, run_dir):
                raise RunRecordError(
                    f"{entry} leads outside the run folder ({entry.resolve()})",
                    hint="a resumed run writes only inside its folder: replace the link by "
                    "the folder or file itself",
                )
        run = folder.read_run()
        if not isinstance(run, BenchRunInfo):
            raise RunRecordError(f"{folder.run_file} is not a bench run record")
        levels = folder.read_summary().levels if folder.summary_file.exists() else []
        # a level counts as finished only when both its summary and its JSONL exist
        levels = [lv for lv in levels if folder.requests_file(*lv.key).exists()]
        return cls(run_dir, run, levels)

    def finished(self) -> set[tuple[Load, int]]:
        return {lv.key for lv in self.levels}

    def kept(self) -> set[tuple[Load, int]]:
        """The finished levels `--resume` keeps: the valid ones (invalid ones run again)."""
        return {lv.key for lv in self.levels if lv.valid}

    # ---- writing ----------------------------------------------------------------------------
    def save_run(self) -> None:
        self.folder.write_run(self.run)

    def add_level(
        self, summary: Level, rows: Iterable[RequestRow], series: Sequence[MetricsSample] = ()
    ) -> None:
        """The metrics series and per-request JSONL first, then summary.json: a level is
        finished once its JSONL and summary exist."""
        self.folder.write_level_rows(summary.load, summary.repeat, rows, series)
        self.levels = [lv for lv in self.levels if lv.key != summary.key]
        self.levels.append(summary)
        self.save_summary()

    def save_summary(self) -> None:
        self.folder.write_summary(Summary(levels=self.levels, spread=spread(self.levels)))

    def finish(self, status: RunStatus, error: str | None = None) -> None:
        self.run.status = status
        self.run.finished_at = utc_now()
        self.run.error = error
        self.save_run()
