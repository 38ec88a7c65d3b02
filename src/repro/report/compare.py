"""Compare two runs point by point: matched levels only, deltas, spread and machines.

cmp = compare_runs(a, b)                       # refuses different workloads unless force
cmp.points[i].delta, .direction ("better"|"worse"|"same"), .verdict
cmp.machines                                   # fingerprint fields side by side

Points come from valid levels only; each invalid level is named in a warning with its reasons.
With `include_invalid` they count too, and their points are marked.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel
from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from repro.errors import ReproError
from repro.report.labels import distinct_pair, unique_labels
from repro.report.records import METRICS, LoadedRun, MetricInfo, Point
from repro.report.table import SIMULATED
from repro.report.timescale import require_one_time_scale
from repro.schema.level import Load
from repro.schema.machine import MachineInfo
from repro.schema.serverinfo import ServerInfo
from repro.tables import fit, fits

Direction = Literal["better", "worse", "same"]
Verdict = Literal["real change", "within spread", "within noise (95% CI)", "no spread (1 repeat)"]

ENERGY_METRICS = ("joules_per_token", "usd_per_mtok")  # skipped where a run has no readings
# The mean ITL is no column of its own: with bench_serving's per-token ITL (each chunk gap
# spread over its tokens) it is the decode time over the tokens after the first, TPOT's very
# sum, and equal to TPOT's mean whenever the requests have one length. Its p99 is the
# per-token tail TPOT averages away.
DEFAULT_METRICS = (
    "output_throughput",
    "ttft",
    "tpot",
    "p99_itl",
    "accept_length",
    *ENERGY_METRICS,
)


class PointDelta(BaseModel):
    metric: str
    level: str  # its label: c=4, r=4/s, trace 1x
    a: float
    b: float
    a_range: tuple[float, float]
    b_range: tuple[float, float]
    a_repeats: int
    b_repeats: int
    delta: float  # b - a
    percent: float | None
    direction: Direction  # of B relative to A
    verdict: Verdict
    invalid: bool = False  # A's or B's values include invalid levels


class FingerprintRow(BaseModel):
    field: str
    a: str
    b: str

    @property
    def differs(self) -> bool:
        return self.a != self.b


class Comparison(BaseModel):
    a_label: str
    b_label: str
    a_simulated: bool
    b_simulated: bool
    a_forced: str | None = None  # `forced 4` when the run's acceptance was forced
    b_forced: str | None = None
    matched: list[str]  # level labels, in order
    only_a: list[str]
    only_b: list[str]
    warnings: list[str]
    points: list[PointDelta]
    machines: list[FingerprintRow]
    same_machine: bool
    include_invalid: bool = False
    metrics: list[str] = []  # asked for, in order; those without a matched point say why
    missing: dict[str, dict[str, bool]] = {}  # metric -> run label -> whether it has values


def _direction(info: MetricInfo, a: float, b: float, verdict: str) -> Direction:
    """`same` when the values agree to 0.05% or their spread or intervals overlap."""
    noise = verdict in ("within spread", "within noise (95% CI)")
    if noise or abs(b - a) <= 5e-4 * max(abs(a), abs(b), 1e-12):
        return "same"
    return "better" if (b > a) == info.higher_is_better else "worse"


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def _verdict(a: Point, b: Point) -> Verdict:
    """A real change when the repeats' ranges do not overlap (2+ repeats on both sides), or,
    with one repeat, when the levels' 95% bootstrap intervals do not."""
    a_vals, b_vals = a.values, b.values
    if len(a_vals) < 2 or len(b_vals) < 2:
        if len(a.intervals) == 1 and len(b.intervals) == 1:
            if _overlap(a.intervals[0], b.intervals[0]):
                return "within noise (95% CI)"
            return "real change"
        return "no spread (1 repeat)"
    if max(a_vals) < min(b_vals) or max(b_vals) < min(a_vals):
        return "real change"
    return "within spread"


def _or_dash(value: object) -> str:
    return "-" if value is None or value == "" else str(value)


def _fingerprint(run: LoadedRun) -> dict[str, str]:
    m = run.machine or MachineInfo()
    names = sorted({g.name for g in m.gpus})
    caps = sorted({g.compute_cap for g in m.gpus if g.compute_cap})
    server = run.server_info or ServerInfo()
    recipe = run.recipe
    cpu_count = "?" if m.cpu_count is None else m.cpu_count
    return {
        "hostname": _or_dash(m.hostname),
        "machine class": run.hardware_class,
        "simulator": run.simulator or "-",
        "GPUs": f"{len(m.gpus)}x {', '.join(names)}" if m.gpus else "none",
        "compute capability": ", ".join(caps) or "-",
        "interconnect": _or_dash(m.interconnect),
        "interconnect probe": m.interconnect_probe.summary if m.interconnect_probe else "-",
        "NUMA nodes": _or_dash(m.numa_nodes),
        "driver": _or_dash(m.driver_version),
        "CUDA (driver)": _or_dash(m.cuda_version),
        "CPU": f"{m.cpu_model or '-'} ({cpu_count} cores)",
        "kernel": _or_dash(m.kernel),
        "docker": _or_dash(m.docker.get("server_version") or m.docker.get("version")),
        "image reference": _or_dash(run.image_reference),
        "image fingerprint": _or_dash(run.image_fingerprint),
        "image registry digest": _or_dash(run.registry_digest),
        "SGLang version": _or_dash(server.version),
        "simulated": "yes" if run.simulated else "no",
        "model": recipe.model_ref,
        "drafter": recipe.drafter_ref,
        "speculative": recipe.algorithm or "none",
        "parallelism": " ".join(f"{k}={v}" for k, v in sorted(recipe.parallelism.items())) or "-",
        "endpoint": str(run.run.endpoint or "-"),
    }


CLOSED_PREFIX = "c="  # a closed-loop level's label; a table of only those heads them `c`


def _labels(loads: set[Load]) -> str:
    return "[" + ", ".join(c.label for c in sorted(loads)) + "]"


def compare_runs(
    a: LoadedRun,
    b: LoadedRun,
    metrics: tuple[str, ...] | list[str] = DEFAULT_METRICS,
    force: bool = False,
    include_invalid: bool = False,
) -> Comparison:
    """B relative to A on the levels both measured with the same workload.

    Different workloads (input/output lengths, dataset and the prompts it gave, request rate)
    are refused unless
    `force`, then they become warnings; a different model is always a warning.
    """
    require_one_time_scale([a, b])
    warnings: list[str] = []
    wa, wb = a.workload_identity(), b.workload_identity()
    if wa["prompts"] is None or wb["prompts"] is None:  # a record from before sources
        wa.pop("prompts"), wb.pop("prompts")
    diffs = [f"{k}: {wa[k]} vs {wb[k]}" for k in wa if wa[k] != wb[k]]
    if a.run.endpoint != b.run.endpoint:
        diffs.append(f"endpoint: {a.run.endpoint} vs {b.run.endpoint}")
    if diffs:
        message = f"the workloads differ ({'; '.join(diffs)})"
        if not force:
            raise ReproError(
                f"{a.path} and {b.path}: {message}: their points are not comparable",
                hint="bench both with the same workload, or pass --force to compare anyway",
            )
        warnings.append(message + ": deltas mix workload and configuration")
    if a.recipe.model_ref != b.recipe.model_ref:
        warnings.append(f"different models: {a.recipe.model_ref} vs {b.recipe.model_ref}")
    if a.simulated != b.simulated:
        warnings.append("one run is SIMULATED and the other is not")
    elif a.sim_profile != b.sim_profile:
        warnings.append(
            f"different simulator profiles: {a.sim_profile} vs {b.sim_profile} (each stands "
            "for its own machine and layout, calibrated or extrapolated as its label says)"
        )
    kinds = [run.forced.label() if run.forced else "measured" for run in (a, b)]
    if kinds[0] != kinds[1]:
        warnings.append(
            f"acceptance: A {kinds[0]}, B {kinds[1]} (SGLANG_SIMULATE_ACC_LEN): "
            "acceptance and throughput differ by construction"
        )
    for run in (a, b):
        if run.run.status != "complete":
            warnings.append(f"{run.label}: run status is {run.run.status}")
        for c, reasons in run.invalid_reasons().items():
            use = "included, marked" if include_invalid else "left out"
            warnings.append(f"{run.label} {c.label} is invalid ({use}): {'; '.join(reasons)}")
    ca, cb = set(a.loads), set(b.loads)
    matched = sorted(ca & cb)
    if not matched:
        raise ReproError(
            f"{a.path} and {b.path} share no level ({_labels(ca)} vs {_labels(cb)})",
            hint="bench both with overlapping concurrencies (or request rates, or trace speed-ups)",
        )
    points: list[PointDelta] = []
    for metric in metrics:
        info = METRICS[metric]
        pa, pb = a.points(metric, include_invalid), b.points(metric, include_invalid)
        for c in matched:
            if c not in pa or c not in pb:
                continue
            x, y = pa[c], pb[c]
            verdict = _verdict(x, y)
            points.append(
                PointDelta(
                    metric=metric,
                    level=c.label,
                    a=x.mean,
                    b=y.mean,
                    a_range=(x.low, x.high),
                    b_range=(y.low, y.high),
                    a_repeats=x.repeats,
                    b_repeats=y.repeats,
                    delta=y.mean - x.mean,
                    percent=(y.mean - x.mean) / x.mean * 100 if x.mean else None,
                    direction=_direction(info, x.mean, y.mean, verdict),
                    verdict=verdict,
                    invalid=x.invalid > 0 or y.invalid > 0,
                )
            )
    fa, fb = _fingerprint(a), _fingerprint(b)
    machines = [FingerprintRow(field=k, a=fa[k], b=fb[k]) for k in fa]
    label_a, label_b = (a.label, b.label) if a.label != b.label else unique_labels([a, b])
    return Comparison(
        a_label=label_a,
        b_label=label_b,
        a_simulated=a.simulated,
        b_simulated=b.simulated,
        a_forced=a.forced.label() if a.forced else None,
        b_forced=b.forced.label() if b.forced else None,
        matched=[c.label for c in matched],
        only_a=[c.label for c in sorted(ca - cb)],
        only_b=[c.label for c in sorted(cb - ca)],
        warnings=warnings,
        points=points,
        machines=machines,
        same_machine=fa["hostname"] == fb["hostname"] and fa["GPUs"] == fb["GPUs"],
        include_invalid=include_invalid,
        metrics=list(metrics),
        missing={
            m: {label_a: bool(a.points(m, True)), label_b: bool(b.points(m, True))} for m in metrics
        },
    )


SHORT = {
    "output_throughput": "tok/s",
    "ttft": "TTFT",
    "itl": "ITL",
    "p99_itl": "p99 ITL",
    "tpot": "TPOT",
    "accept_length": "accept",
    "joules_per_token": "J/tok",
    "usd_per_mtok": "$/Mtok",
}


def number(value: float) -> str:
    """A value with four significant digits or its whole part: 5178, 517.8, 51.78, 0.52."""
    if abs(value) >= 1000:
        return f"{value:.0f}"
    return f"{value:.1f}" if abs(value) >= 100 else f"{value:.2f}"


def _ratio(p: PointDelta) -> Text:
    ratio = f"{p.b / p.a:.2f}x" if p.a else "-"
    mark = ""
    if p.verdict == "real change" and p.direction != "same":
        mark = "▲" if p.direction == "better" else "▼"
    style = {"▲": "green", "▼": "red"}.get(mark, "")
    return Text(ratio + mark + ("!" if p.invalid else ""), style=style)


def _metric_tables(cmp: Comparison, per_table: int) -> list[Table]:
    """Levels as rows; per metric the A and B values and B/A, `per_table` metrics a table."""
    metrics = list(dict.fromkeys(p.metric for p in cmp.points))
    by_key = {(p.metric, p.level): p for p in cmp.points}
    levels = list(dict.fromkeys(c for c in cmp.matched if any(p.level == c for p in cmp.points)))
    tables = []
    for start in range(0, len(metrics), per_table):
        group = metrics[start : start + per_table]
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
        closed = all(c.startswith(CLOSED_PREFIX) for c in levels)
        table.add_column("\nc" if closed else "\nlevel", justify="right")
        for metric in group:
            info = METRICS[metric]
            head = SHORT.get(metric, f"{metric} {info.unit}")
            table.add_column(f"{head}\nA", justify="right")
            table.add_column("\nB", justify="right")
            table.add_column("\nB/A", justify="right")
        for c in levels:
            row: list[str | Text] = [c.removeprefix(CLOSED_PREFIX) if closed else c]
            for metric in group:
                p = by_key.get((metric, c))
                row += [number(p.a), number(p.b), _ratio(p)] if p else ["-", "-", "-"]
            table.add_row(*row)
        tables.append(table)
    return tables


def _legend(cmp: Comparison) -> str:
    verdicts = {p.verdict for p in cmp.points}
    parts = ["B/A: B's value over A's; latencies in ms"]
    if "real change" in verdicts:
        parts.append("▲/▼ a real change for the better/worse (outside both runs' spread)")
    if "no spread (1 repeat)" in verdicts:
        parts.append("one repeat gives no spread to judge a change (bench --repeats)")
    if any(p.invalid for p in cmp.points):
        parts.append("! invalid levels included")
    return "; ".join(parts)


def _why_none(cmp: Comparison, metric: str) -> str:
    """Why a metric has no point: which run lacks it."""
    missing = [label for label, has in cmp.missing.get(metric, {}).items() if not has]
    if missing:
        return f"not measured by {' and '.join(missing)}" + (
            " (no speculative decoding)" if metric.startswith("accept_length") else ""
        )
    return "no level has it in both runs"


class _Comparison:
    """Lays the comparison out for the width it is printed at (80 columns and up)."""

    def __init__(self, cmp: Comparison) -> None:
        self.cmp = cmp

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        cmp, width = self.cmp, options.max_width
        for w in cmp.warnings:
            yield Text(f"warning: {w}", style="yellow")
        room = max(12, (width - 14) // 2)
        a_label, b_label = distinct_pair(cmp.a_label, cmp.b_label, room)
        sim = f" {SIMULATED}" if cmp.a_simulated or cmp.b_simulated else ""
        yield Text(f"B = {b_label}  vs  A = {a_label}{sim}", style="bold")
        metrics = len({p.metric for p in cmp.points})
        for per_table in range(max(1, metrics), 0, -1):  # as many metrics a table as fit
            tables = _metric_tables(cmp, per_table)
            if all(fits(t, console, options) for t in tables):
                break
        for table in tables:
            yield fit(table)
        for metric in cmp.metrics:
            if not any(p.metric == metric for p in cmp.points):
                yield Text(f"{metric}: {_why_none(cmp, metric)}", style="yellow")
        if cmp.points:
            yield Text(_legend(cmp), style="dim")
        if cmp.only_a or cmp.only_b:
            only = f"only A [{', '.join(cmp.only_a)}], only B [{', '.join(cmp.only_b)}]"
            yield Text(f"unmatched levels left out: {only}", "dim")
        differing = [row for row in cmp.machines if row.differs]
        kind = "same machine" if cmp.same_machine else "different machines"
        same = len(cmp.machines) - len(differing)
        yield Text(f"machines ({kind}; {same} fields the same, --json for all):", style="bold")
        if differing:
            machines = Table(box=box.SIMPLE_HEAD, pad_edge=False)
            machines.add_column("field", no_wrap=True)
            machines.add_column("A")
            machines.add_column("B")
            for row in differing:
                machines.add_row(row.field, Text(row.a, "yellow"), Text(row.b, "yellow"))
            yield fit(machines)


def render_comparison(cmp: Comparison) -> Any:
    """A rich renderable: warnings, one table per few metrics (levels as rows; A, B and B/A
    per metric), a legend, then the machine fields that differ."""
    return _Comparison(cmp)


def comparison_to_json(cmp: Comparison) -> dict[str, Any]:
    data = cmp.model_dump(mode="json")
    for row, model in zip(data["machines"], cmp.machines, strict=True):
        row["differs"] = model.differs
    data["simulated"] = cmp.a_simulated or cmp.b_simulated
    return data
