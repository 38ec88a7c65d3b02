"""The run record (docs/run-record.md): one folder per run, every file written atomically
(`repro.fsutil.write_atomic`), levels appended one finished level at a time so that a crashed
run keeps what it finished and `--resume` continues it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from repro import fileread
from repro.bench.metrics import spread
from repro.errors import ReproError
from repro.fsutil import write_atomic
from repro.schema.record import (
    BenchRunInfo,
    Level,
    RequestRow,
    RunStatus,
    Summary,
    first_error,
)
from repro.schema.server import MetricsSample

M = TypeVar("M", bound=BaseModel)

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
SERVER_LOG = "server.log"


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _finite(data: Any) -> Any:
    """`data` with every NaN and infinity replaced by None (JSON's null)."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: _finite(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_finite(v) for v in data]
    return data


def strict_json(data: Any, **options: Any) -> str:
    """`data` as strict JSON (RFC 8259): NaN and infinities, which it has no literal for,
    become null, so that every other tool reads the record; values JSON has no type for
    become str."""
    try:
        return json.dumps(data, allow_nan=False, default=str, **options)
    except ValueError:  # a non-finite float somewhere: the rare case pays for the walk
        return json.dumps(_finite(data), allow_nan=False, default=str, **options)


def write_json(path: Path, data: Any) -> None:
    """`data` as indented strict JSON, written atomically."""
    write_atomic(path, strict_json(data, indent=2, sort_keys=False) + "\n")


def write_server_log(run_dir: Path, lines: Sequence[str]) -> None:
    """Keep a server's last log lines in a run folder as `server.log` (nothing when empty):
    the one writer for the bench record on a failed sweep and `repro run`'s folder at stop."""
    if lines:
        write_atomic(run_dir / SERVER_LOG, "\n".join(lines) + "\n")


def write_model(path: Path, model: BaseModel, *, exclude_unset: bool = False) -> None:
    """A run-record model as its JSON file (docs/run-record.md)."""
    write_json(path, model.model_dump(mode="json", exclude_unset=exclude_unset))


def read_json(path: Path) -> Any:
    """A run file, bounded in size, encoding and depth (repro.fileread)."""
    try:
        return fileread.read_json(path)
    except FileNotFoundError:
        raise ReproError(f"{path} is missing", hint="is this a run directory?") from None


def fresh_run_dir(base: Path, name: str) -> Path:
    """`base/<UTC timestamp>-<name>`, the name made safe for a folder, with -2, -3, ... when
    that folder exists: the one place a run folder is named (bench, accept and `repro run`)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    run_dir = base / f"{stamp}-{_SAFE.sub('-', name)}"
    n = 1
    while run_dir.exists():
        n += 1
        run_dir = base / f"{stamp}-{_SAFE.sub('-', name)}-{n}"
    return run_dir


def new_run_dir(recipe_name: str, output: Path | None, base: Path = Path("runs")) -> Path:
    """`runs/<UTC timestamp>-<recipe>/` unless `output` is given; never reuses a folder."""
    if output is not None:
        run_dir = output
        if run_dir.exists() and any(run_dir.iterdir()):
            raise ReproError(
                f"{run_dir} already exists and is not empty",
                hint="pick another --output, or continue that run with --resume",
            )
    else:
        run_dir = fresh_run_dir(base, recipe_name)
    run_dir.mkdir(parents=True, exist_ok=True)
    return run_dir


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
            raise ReproError(f"{run_dir} is not a run directory", hint="pass a folder under runs/")
        data = read_json(run_dir / "run.json")
        if not isinstance(data, dict) or data.get("kind") != "bench":
            raise ReproError(f"{run_dir}/run.json is not a bench run record")
        run = _validate(BenchRunInfo, data, run_dir / "run.json")
        summary_path = run_dir / "summary.json"
        levels = (
            _validate(Summary, read_json(summary_path), summary_path).levels
            if summary_path.exists()
            else []
        )
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


def _validate(model: type[M], data: Any, path: Path) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise ReproError(
            f"{path}: {first_error(err)}", hint="see docs/run-record.md for the fields"
        ) from None
