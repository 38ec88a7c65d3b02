"""The run record (docs/run-record.md): one folder per run, every file written atomically
(`repro.fsutil.write_atomic`), levels appended one finished level at a time so that a crashed
run keeps what it finished and `--resume` continues it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from repro.errors import ReproError
from repro.fsutil import write_atomic

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
SERVER_LOG = "server.log"


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def write_json(path: Path, data: Any) -> None:
    """`data` as indented JSON, written atomically; values JSON has no type for become str."""
    write_atomic(path, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


def write_server_log(run_dir: Path, lines: Sequence[str]) -> None:
    """Keep a server's last log lines in a run folder as `server.log` (nothing when empty):
    the one writer for the bench record on a failed sweep and `repro run`'s folder at stop."""
    if lines:
        write_atomic(run_dir / SERVER_LOG, "\n".join(lines) + "\n")


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReproError(f"{path} is missing", hint="is this a run directory?") from None
    except json.JSONDecodeError as exc:
        raise ReproError(f"{path} is not valid JSON: {exc}") from None


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
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        run_dir = base / f"{stamp}-{_SAFE.sub('-', recipe_name)}"
        n = 1
        while run_dir.exists():
            n += 1
            run_dir = base / f"{stamp}-{_SAFE.sub('-', recipe_name)}-{n}"
    run_dir.mkdir(parents=True, exist_ok=True)
    return run_dir


def level_name(concurrency: int, repeat: int) -> str:
    return f"c{concurrency}-r{repeat}"


class RunRecord:
    """Writes one run folder. `run` is the content of run.json, kept in memory."""

    def __init__(self, run_dir: Path, run: dict[str, Any], levels: list[dict[str, Any]]):
        self.dir = run_dir
        self.run = run
        self.levels = levels

    # ---- create / resume ------------------------------------------------------------------
    @classmethod
    def create(cls, run_dir: Path, run: dict[str, Any]) -> RunRecord:
        record = cls(run_dir, run, [])
        record.save_run()
        return record

    @classmethod
    def open(cls, run_dir: Path) -> RunRecord:
        """An existing run, for --resume: finished levels come from summary.json."""
        if not run_dir.is_dir():
            raise ReproError(f"{run_dir} is not a run directory", hint="pass a folder under runs/")
        run = read_json(run_dir / "run.json")
        if not isinstance(run, dict) or run.get("kind") != "bench":
            raise ReproError(f"{run_dir}/run.json is not a bench run record")
        summary_path = run_dir / "summary.json"
        levels = read_json(summary_path).get("levels", []) if summary_path.exists() else []
        # a level counts as finished only when both its summary and its JSONL exist
        levels = [
            lv
            for lv in levels
            if (
                run_dir / "levels" / f"{level_name(lv['concurrency'], lv['repeat'])}.jsonl"
            ).exists()
        ]
        return cls(run_dir, run, levels)

    def finished(self) -> set[tuple[int, int]]:
        return {(int(lv["concurrency"]), int(lv["repeat"])) for lv in self.levels}

    # ---- writing ----------------------------------------------------------------------------
    def save_run(self) -> None:
        write_json(self.dir / "run.json", self.run)

    def write(self, name: str, data: Any) -> None:
        write_json(self.dir / name, data)

    def add_level(self, summary: dict[str, Any], rows: Iterable[Mapping[str, Any]]) -> None:
        """Per-request JSONL first, then summary.json: a level is finished once both exist."""
        name = level_name(summary["concurrency"], summary["repeat"])
        text = "".join(json.dumps(row, separators=(",", ":")) + "\n" for row in rows)
        write_atomic(self.dir / "levels" / f"{name}.jsonl", text)
        key = (summary["concurrency"], summary["repeat"])
        self.levels = [lv for lv in self.levels if (lv["concurrency"], lv["repeat"]) != key] + [
            summary
        ]
        self.save_summary()

    def save_summary(self) -> None:
        from repro.bench.metrics import spread

        write_json(
            self.dir / "summary.json", {"levels": self.levels, "spread": spread(self.levels)}
        )

    def finish(self, status: str, error: str | None = None) -> None:
        self.run["status"] = status
        self.run["finished_at"] = utc_now()
        self.run["error"] = error
        self.save_run()
