"""The bench run record (docs/run-record.md): levels appended one finished level at a time, so
that a crashed run keeps what it finished and `--resume` continues it. The folder's name and
its files' reading and writing are `repro.runfolder`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from repro import fileread
from repro.bench.metrics import spread
from repro.fsutil import write_atomic
from repro.runfolder import (
    RunRecordError,
    read_json,
    read_model,
    strict_json,
    utc_now,
    validated,
    write_json,
    write_model,
)
from repro.schema.level import Level, RequestRow, Summary
from repro.schema.record import BenchRunInfo, RunStatus
from repro.schema.server import MetricsSample


def level_name(concurrency: int, repeat: int) -> str:
    return f"c{concurrency}-r{repeat}"


class RunWriter:
    """Writes one bench run folder; `run` is run.json, `levels` summary.json's finished levels."""

    def __init__(self, run_dir: Path, run: BenchRunInfo, levels: list[Level]):
        self.dir = run_dir
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
        if not run_dir.is_dir():
            raise RunRecordError(
                f"{run_dir} is not a run directory", hint="pass a folder under runs/"
            )
        for entry in [run_dir / "levels", *run_dir.iterdir()]:
            if not fileread.within(entry, run_dir):
                raise RunRecordError(
                    f"{entry} leads outside the run folder ({entry.resolve()})",
                    hint="a resumed run writes only inside its folder: replace the link by "
                    "the folder or file itself",
                )
        data = read_json(run_dir / "run.json")
        if not isinstance(data, dict) or data.get("kind") != "bench":
            raise RunRecordError(f"{run_dir}/run.json is not a bench run record")
        run = validated(BenchRunInfo.model_validate, data, run_dir / "run.json")
        summary_path = run_dir / "summary.json"
        levels = read_model(summary_path, Summary).levels if summary_path.exists() else []
        # a level counts as finished only when both its summary and its JSONL exist
        levels = [lv for lv in levels if _jsonl(run_dir, lv.concurrency, lv.repeat).exists()]
        return cls(run_dir, run, levels)

    def finished(self) -> set[tuple[int, int]]:
        return {(lv.concurrency, lv.repeat) for lv in self.levels}

    def kept(self) -> set[tuple[int, int]]:
        """The finished levels `--resume` keeps: the valid ones (invalid ones run again)."""
        return {(lv.concurrency, lv.repeat) for lv in self.levels if lv.valid}

    # ---- writing ----------------------------------------------------------------------------
    def save_run(self) -> None:
        write_model(self.dir / "run.json", self.run)

    def write(self, name: str, data: Any) -> None:
        write_json(self.dir / name, data)

    def add_level(
        self, summary: Level, rows: Iterable[RequestRow], series: Sequence[MetricsSample] = ()
    ) -> None:
        """The metrics series and per-request JSONL first, then summary.json: a level is
        finished once its JSONL and summary exist."""
        requests = _jsonl(self.dir, summary.concurrency, summary.repeat)
        metrics = requests.with_name(
            f"{level_name(summary.concurrency, summary.repeat)}.metrics.jsonl"
        )
        if series:
            write_atomic(metrics, _lines(series))
        else:
            metrics.unlink(missing_ok=True)  # a re-run level drops the old one's series
        write_atomic(requests, _lines(rows))
        key = (summary.concurrency, summary.repeat)
        self.levels = [lv for lv in self.levels if (lv.concurrency, lv.repeat) != key]
        self.levels.append(summary)
        self.save_summary()

    def save_summary(self) -> None:
        write_model(
            self.dir / "summary.json", Summary(levels=self.levels, spread=spread(self.levels))
        )

    def finish(self, status: RunStatus, error: str | None = None) -> None:
        self.run.status = status
        self.run.finished_at = utc_now()
        self.run.error = error
        self.save_run()


def _lines(models: Iterable[BaseModel]) -> str:
    return "".join(
        strict_json(m.model_dump(mode="json"), separators=(",", ":")) + "\n" for m in models
    )


def _jsonl(run_dir: Path, concurrency: int, repeat: int) -> Path:
    return run_dir / "levels" / f"{level_name(concurrency, repeat)}.jsonl"
