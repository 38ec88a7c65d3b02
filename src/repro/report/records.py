"""Run records (docs/run-record.md) loaded for reports, validated with repro.schema.record.

    run = load_run("runs/20250101T000000Z-kimi26-ep4")
    run.recipe_name, run.machine_class, run.image_digest_short, run.simulated
    run.points("output_throughput")        # {load: Point(mean, values per repeat)}
                                           # from valid levels; include_invalid=True: all
    run.invalid_reasons()                  # {load: reasons of its invalid levels}

A missing or corrupt file raises `RunRecordError` naming the file and what was wrong.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from repro.report.labels import run_title, shortened, unique_labels
from repro.runfolder import RunFolder, record_folder
from repro.schema.base import Interval
from repro.schema.level import Load, RequestRow
from repro.schema.machine import hardware_label
from repro.schema.record import BenchWorkload, RunRecord
from repro.schema.serverinfo import engine_label, simulator_label

R = TypeVar("R")


class MetricInfo(BaseModel):
    """How one reportable metric is read from a summary level and judged."""

    name: str
    key: str  # key in a summary.json level
    label: str
    unit: str
    higher_is_better: bool


def _metric(name: str, key: str, label: str, unit: str, higher: bool) -> MetricInfo:
    return MetricInfo(name=name, key=key, label=label, unit=unit, higher_is_better=higher)


# Latencies as sglang.bench_serving (and `vllm bench serve --percentile-metrics`) report them:
# mean, median (p50), p90 and p99 of each; `ttft` alone is the mean.
_LATENCIES = {
    "ttft": "TTFT",
    "itl": "ITL (per token)",
    "tpot": "TPOT",
    "e2e_latency": "E2E latency",
    "chunk_gap": "chunk gap",
}
_STATISTICS = {"mean": "mean", "p50": "median", "p90": "p90", "p99": "p99"}
_RATES = [  # (name, label, unit), all higher-is-better keys of a summary level
    ("output_throughput", "output throughput", "tok/s"),
    ("input_throughput", "input throughput", "tok/s"),
    ("request_throughput", "request throughput", "req/s"),
    ("output_throughput_per_user", "output throughput per user", "tok/s"),
    ("output_throughput_per_gpu", "output throughput per GPU", "tok/s"),
    ("goodput", "goodput", "req/s"),
    ("accept_length", "acceptance length", "tok/step"),
    ("accept_length_mean_per_request", "acceptance length (mean per request)", "tok/step"),
    ("verify_steps_per_s", "verify steps", "1/s"),
]
_COSTS = [  # (name, key, label, unit), lower-is-better; None in levels without readings/price
    ("joules_per_token", "joules_per_output_token", "energy per output token", "J/tok"),
    ("power", "mean_power_w", "mean GPU power", "W"),
    ("usd_per_mtok", "usd_per_mtok", "cost per million output tokens", "$/Mtok"),
]


def _all_metrics() -> dict[str, MetricInfo]:
    out = {name: _metric(name, name, label, unit, True) for name, label, unit in _RATES}
    out |= {name: _metric(name, key, label, unit, False) for name, key, label, unit in _COSTS}
    for base, label in _LATENCIES.items():
        for stat, key_stat in _STATISTICS.items():
            name = f"{stat}_{base}"
            out[name] = _metric(name, f"{key_stat}_{base}_ms", f"{stat} {label}", "ms", False)
        out[base] = out[f"mean_{base}"].model_copy(update={"name": base})  # `ttft`: the mean
    return out


METRICS: dict[str, MetricInfo] = _all_metrics()
"""Every metric `--metric` offers, by name: rates, energy and cost, and mean/p50/p90/p99 of
each latency."""


class Point(BaseModel):
    """One metric at one load (a concurrency, a rate, a trace speed-up): the repeats' values,
    their mean and range."""

    load: Load
    values: list[float]
    invalid: int = Field(default=0, description="how many of the values come from invalid levels")
    intervals: list[tuple[float, float]] = Field(
        default_factory=list,
        description="95% bootstrap intervals of the repeats' values, where the levels carry them",
    )

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    @property
    def repeats(self) -> int:
        return len(self.values)


class LoadedRun(RunRecord):
    """A run record loaded for reports: the record, its row label and the metric helpers."""

    label: str = Field(default="", description="row label: recipe name, unique among loaded runs")

    @property
    def run_name(self) -> str:
        """The folder that names the run: a `repro run` folder for its bench/ and accept/ parts,
        else the record folder itself."""
        pipeline = RunFolder(self.path).pipeline()
        return (pipeline or RunFolder(self.path)).name

    @property
    def sim_profile(self) -> str | None:
        """The simulator profile that produced the numbers (None: not simulated, or unknown)."""
        return self.server_info.sim_profile if self.server_info else None

    @property
    def machine_class(self) -> str:
        """e.g. `8x RTX PRO 6000 Blackwell, pcie-cross-numa, SGLang 0.5.23`; `no GPUs, SGLang
        0.5.23` for SGLang's CPU engine; for a simulated run the profile and time scale (`sim
        kimi26-ep4-rtx6000, time-scale 1`): every report names what served the numbers."""
        return self.simulator or f"{self.hardware_class}, {engine_label(self.server_info)}"

    @property
    def simulator(self) -> str | None:
        """`sim <profile>, time-scale <x>` for a simulated run whose server named its profile."""
        return simulator_label(self.server_info) if self.simulated else None

    @property
    def hardware_class(self) -> str:
        """The machine that ran the record, whatever served it (`no GPUs` for the simulator)."""
        return hardware_label(self.machine)

    @property
    def image_digest(self) -> str | None:
        """The image digest from the lock (registry digest, else content fingerprint), else what
        the server reported."""
        image = self.lock.image if self.lock is not None else None
        if image is not None:
            return image.digest or image.fingerprint
        for key in ("digest", "image_digest", "repo_digest", "image_id", "id", "fingerprint"):
            value = getattr(self.server_info, key, None)  # older records: other spellings
            if isinstance(value, str) and value:
                return value
        return None

    @property
    def image_reference(self) -> str | None:
        """The image tag the lock records (`repro/<spec>:<version>`), else the one the
        deployment ran (`server_info.json`, written when repro launched the server)."""
        if self.lock is not None and self.lock.image:
            return self.lock.image.reference
        return self.server_info.image_reference if self.server_info else None

    @property
    def image_fingerprint(self) -> str | None:
        """The image's content fingerprint (what `repro image verify` compares), from the lock."""
        image = self.lock.image if self.lock is not None else None
        return image.fingerprint if image is not None else None

    @property
    def registry_digest(self) -> str | None:
        """The registry manifest digest, once the image was pushed (`repo@sha256:...`)."""
        image = self.lock.image if self.lock is not None else None
        return (image.pinned or image.digest) if image is not None else None

    @property
    def image_digest_short(self) -> str:
        digest = self.image_digest
        if not digest:
            return "-"
        tail = digest.split("@", 1)[-1]
        algo, _, hexpart = tail.partition(":")
        return f"{algo}:{hexpart[:12]}" if hexpart else tail[:19]

    def workload_identity(self) -> dict[str, Any]:
        """What must agree for two runs' points to be comparable: the settings and, where both
        runs recorded it, the prompts' content (a Hub commit, a file's sha256)."""
        workload = self.run.workload
        if not isinstance(workload, BenchWorkload):  # an accept run: no bench settings
            workload = BenchWorkload()
        return {
            "input_len": workload.input_len,
            "output_len": workload.output_len,
            "dataset": workload.dataset,
            "request_rate": workload.request_rate,
            "burstiness": workload.burstiness,
            "max_concurrency": workload.max_concurrency,
            "trace": workload.trace_source.identity() if workload.trace_source else None,
            "prompts": workload.dataset_source.identity() if workload.dataset_source else None,
        }

    def points(self, metric: str, include_invalid: bool = False) -> dict[Load, Point]:
        """Per load, the metric's value in each repeat (levels without it are left out;
        invalid levels too, unless `include_invalid`)."""
        key = METRICS[metric].key if metric in METRICS else metric
        out: dict[Load, Point] = {}
        for level in sorted(self.levels, key=lambda lv: lv.key):
            value = level.value(key)
            if value is None or not (level.valid or include_invalid):
                continue
            point = out.setdefault(level.load, Point(load=level.load, values=[]))
            point.values.append(value)
            point.invalid += not level.valid
            interval = getattr(level, f"{key}_ci95", None)
            if isinstance(interval, Interval):
                point.intervals.append((interval.low, interval.high))
        return out

    def invalid_reasons(self) -> dict[Load, list[str]]:
        """Per load with invalid levels, their reasons (each once, `r<repeat>: ...` when the
        load was repeated)."""
        repeated = {lv.load for lv in self.levels if lv.repeat > 0}
        out: dict[Load, list[str]] = {}
        for level in sorted(self.levels, key=lambda lv: lv.key):
            if level.valid:
                continue
            tag = f"r{level.repeat}: " if level.load in repeated else ""
            reasons = out.setdefault(level.load, [])
            reasons += [tag + r for r in level.reasons or ["invalid"] if tag + r not in reasons]
        return out

    def requests(self, load: Load | int, repeat: int) -> list[RequestRow]:
        """The per-request rows of one level (an int: a closed-loop concurrency)."""
        return RunFolder(self.path).read_requests(load, repeat)


def _or_accept_part(folder: RunFolder, read: Callable[[RunFolder], R | None]) -> R | None:
    """What `read` finds in the record, else, for a `repro run` folder's bench/ part, in
    its accept/ part."""
    found = read(folder)
    owner = folder.owner()
    if found is None and owner is not None and folder == owner.bench:
        found = read(owner.accept)
    return found


def load_run(path: str | Path) -> LoadedRun:
    """Load and validate one run record folder (or its `run.json`), or a `repro run` folder:
    its bench/ part with the acceptance results of its accept/ part and its machine.json."""
    folder = record_folder(path, shown=True)  # what a report shows is cleaned text
    run = folder.read_run()
    owner = folder.owner()
    accept = _or_accept_part(folder, RunFolder.read_accept)
    accuracy = _or_accept_part(folder, RunFolder.read_accuracy)
    machine = folder.read_machine()
    if machine is None and owner is not None:  # collected once, by the doctor stage
        machine = owner.read_machine()
    loaded = LoadedRun(
        path=folder.path,
        run=run,
        recipe=folder.read_recipe(),
        lock=folder.read_lock(),
        machine=machine,
        server_info=folder.read_server_info(),
        levels=folder.read_summary().levels,
        accept=accept,
        accuracy=accuracy,
    )
    loaded.label = shortened(run_title(loaded))
    return loaded


def load_runs(paths: list[str | Path] | tuple[str | Path, ...]) -> list[LoadedRun]:
    """Load several run records, labelled apart (see `repro.report.labels`)."""
    runs = [load_run(p) for p in paths]
    for run, label in zip(runs, unique_labels(runs), strict=True):
        run.label = label
    return runs
