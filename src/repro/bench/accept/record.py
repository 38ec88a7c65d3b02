"""The run folder of `repro accept`, written as it goes: each prompt set's result lands in
accept.json when the set ends, so a server that dies during the second set loses nothing of
the first, and `repro accept --resume RUN` measures only the sets still missing.

A new folder (`runs/<UTC>-<recipe>-accept/`) gets run.json ("running", then "complete" or
"failed" with the error), recipe.json, server_info.json, machine.json and an empty
summary.json; an existing bench run given as `output` only gains accept.json.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from repro.bench.options import MeasureOptions
from repro.bench.target import BenchTarget
from repro.errors import ReproError
from repro.runfolder import RunFolder, new_run_dir, utc_now
from repro.schema.accept import AcceptResults, AcceptSet
from repro.schema.level import Summary
from repro.schema.record import (
    AcceptRunInfo,
    AcceptWorkload,
    RunStatus,
    ServerIdentity,
)
from repro.schema.serverinfo import ServerInfo


@dataclass
class AcceptRecord:
    run_dir: Path
    run: AcceptRunInfo | None  # None: accept.json added to another run's folder
    results: AcceptResults

    def save_set(self, result: AcceptSet) -> None:
        """One finished prompt set, written at once."""
        self.results.sets.append(result)
        self.save()

    @property
    def folder(self) -> RunFolder:
        return RunFolder(self.run_dir)

    def save(self) -> None:
        self.folder.write_accept(self.results)

    def finish(self, status: RunStatus, error: str | None = None) -> None:
        self.save()
        if self.run is not None:
            self.run.status, self.run.error, self.run.finished_at = status, error, utc_now()
            self.folder.write_run(self.run)


def open_record(
    target: BenchTarget,
    opts: MeasureOptions,
    url: str,
    info: ServerInfo,
    results: AcceptResults,
    identity: ServerIdentity | None = None,
) -> AcceptRecord:
    """A new accept run folder (or `opts.output`'s bench run), resumed from `opts.resume`."""
    if opts.resume is not None:
        return _resumed(opts.resume, results)
    out = opts.output
    if out is not None and RunFolder(out).has_run():
        return AcceptRecord(out, None, results)  # add accept.json to an existing run
    recipe, lock = target.recipe, target.lock
    run_dir = new_run_dir(f"{target.name}-accept", out, opts.runs_dir)
    protocol = results.protocol
    run = AcceptRunInfo(
        run_id=run_dir.name,
        recipe_name=target.name,
        status="running",
        simulated=results.simulated,
        forced_acceptance=results.forced_acceptance,
        started_at=utc_now(),
        server_url=url,
        endpoint="generate",
        server_identity=identity,
        workload=AcceptWorkload(
            accept=recipe.accept.model_dump(mode="json") if recipe and recipe.accept else None,
            chat_template=protocol.chat_template if protocol else None,
            protocol=protocol,
        ),
    )
    record = AcceptRecord(run_dir, run, results)
    folder = record.folder
    folder.write_run(run)
    folder.write_recipe(target.recorded(target.bench))
    if lock is not None:
        folder.write_lock(lock)
    folder.write_server_info(info)
    folder.write_summary(Summary(levels=[]), exclude_unset=True)  # no spread
    if opts.provenance.machine is not None:
        folder.write_machine(opts.provenance.machine)
    record.save()
    return record


def _resumed(run_dir: Path, results: AcceptResults) -> AcceptRecord:
    """The run to continue: its finished sets kept, refused when it was measured another way."""
    folder = RunFolder(run_dir)
    saved = folder.read_accept()
    if saved is None:
        raise ReproError(
            f"{folder.accept_file}: missing",
            hint="is this an accept run? `repro accept` wrote none here",
        )
    recorded = folder.read_run()
    run = recorded if isinstance(recorded, AcceptRunInfo) else None
    if saved.recipe_name != results.recipe_name or saved.protocol != results.protocol:
        raise ReproError(
            f"{run_dir} was measured with recipe {saved.recipe_name} and protocol "
            f"{saved.protocol}, not {results.recipe_name} with {results.protocol}",
            hint="resume with the recipe and options it was started with, or start a new run",
        )
    results.sets = list(saved.sets)
    if run is not None:
        run.status, run.error, run.finished_at = "running", None, None
        folder.write_run(run)
    return AcceptRecord(run_dir, run, results)
