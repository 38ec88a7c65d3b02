"""Compare two runs point by point: matched concurrencies only, deltas, spread and machines.

cmp = compare_runs(a, b)                       # refuses different workloads unless force
cmp.points[i].delta, .direction ("better"|"worse"|"same"), .verdict
cmp.machines                                   # fingerprint fields side by side

Points come from valid levels only; each invalid level is named in a warning with its reasons.
With `include_invalid` they count too, and their points are marked.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel
from rich.console import Group
from rich.table import Table
from rich.text import Text

from repro.errors import ReproError
from repro.report.labels import unique_labels
from repro.report.records import METRICS, LoadedRun, MetricInfo, Point
from repro.report.table import SIMULATED
from repro.spec.machine import MachineInfo, ServerInfo
from repro.tables import fit

Direction = Literal["better", "worse", "same"]
Verdict = Literal["real change", "within spread", "within noise (95% CI)", "no spread (1 repeat)"]

ENERGY_METRICS = ("joules_per_token", "usd_per_mtok")  # skipped where a run has no readings
DEFAULT_METRICS = ("output_throughput", "ttft", "itl", "tpot", "accept_length", *ENERGY_METRICS)


class PointDelta(BaseModel):
    metric: str
    concurrency: int
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
    matched: list[int]
    only_a: list[int]
    only_b: list[int]
    warnings: list[str]
    points: list[PointDelta]
    machines: list[FingerprintRow]
    same_machine: bool
    include_invalid: bool = False


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


def _model_of(run: LoadedRun) -> str:
    model = run.recipe.get("model") or {}
    return f"{model.get('repo', '?')}@{model.get('revision', '?')}"


def _drafter_of(run: LoadedRun) -> str:
    drafter = run.recipe.get("drafter") or {}
    return f"{drafter.get('repo')}@{drafter.get('revision')}" if drafter else "none"


def _or_dash(value: object) -> str:
    return "-" if value is None or value == "" else str(value)


def _fingerprint(run: LoadedRun) -> dict[str, str]:
    m = run.machine or MachineInfo()
    names = sorted({g.name for g in m.gpus})
    caps = sorted({g.compute_cap for g in m.gpus if g.compute_cap})
    server = run.server_info or ServerInfo()
    par = run.recipe.get("parallelism") or {}
    spec = run.recipe.get("speculative") or {}
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
        "model": _model_of(run),
        "drafter": _drafter_of(run),
        "speculative": str(spec.get("algorithm") or "none"),
        "parallelism": " ".join(f"{k}={v}" for k, v in sorted(par.items())) or "-",
        "endpoint": str(run.run.endpoint or "-"),
    }


def compare_runs(
    a: LoadedRun,
    b: LoadedRun,
    metrics: tuple[str, ...] | list[str] = DEFAULT_METRICS,
    force: bool = False,
    include_invalid: bool = False,
) -> Comparison:
    """B relative to A on the concurrencies both measured with the same workload.

    Different workloads (input/output lengths, dataset and the prompts it gave, request rate)
    are refused unless
    `force`, then they become warnings; a different model is always a warning.
    """
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
    if _model_of(a) != _model_of(b):
        warnings.append(f"different models: {_model_of(a)} vs {_model_of(b)}")
    if a.simulated != b.simulated:
        warnings.append("one run is SIMULATED and the other is not")
    for run in (a, b):
        if run.run.status != "complete":
            warnings.append(f"{run.label}: run status is {run.run.status}")
        for c, reasons in run.invalid_reasons().items():
            use = "included, marked" if include_invalid else "left out"
            warnings.append(f"{run.label} c={c} is invalid ({use}): {'; '.join(reasons)}")
    ca, cb = set(a.concurrencies), set(b.concurrencies)
    matched = sorted(ca & cb)
    if not matched:
        raise ReproError(
            f"{a.path} and {b.path} share no concurrency level ({sorted(ca)} vs {sorted(cb)})",
            hint="bench both with overlapping concurrencies",
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
                    concurrency=c,
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
        matched=matched,
        only_a=sorted(ca - cb),
        only_b=sorted(cb - ca),
        warnings=warnings,
        points=points,
        machines=machines,
        same_machine=fa["hostname"] == fb["hostname"] and fa["GPUs"] == fb["GPUs"],
        include_invalid=include_invalid,
    )


def _arrow(p: PointDelta) -> str:
    return {"better": "▲ better", "worse": "▼ worse", "same": "= same"}[p.direction]


def render_comparison(cmp: Comparison) -> Group:
    """Rich renderables: deltas table, then the fingerprints side by side."""
    parts: list[Any] = []
    for w in cmp.warnings:
        parts.append(Text(f"warning: {w}", style="yellow"))
    a_name = cmp.a_label + (f" {SIMULATED}" if cmp.a_simulated else "")
    b_name = cmp.b_label + (f" {SIMULATED}" if cmp.b_simulated else "")
    table = Table(title=f"B = {b_name}  vs  A = {a_name}")
    for col, justify in [
        ("metric", "left"),
        ("c", "right"),
        ("A", "right"),
        ("B", "right"),
        ("delta", "right"),
        ("%", "right"),
        ("direction", "left"),
        ("verdict", "left"),
    ]:
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for p in cmp.points:
        info = METRICS[p.metric]
        style = {"better": "green", "worse": "red", "same": ""}[p.direction]
        verdict_style = "bold" if p.verdict == "real change" else "dim"
        table.add_row(
            f"{info.label} ({info.unit})",
            str(p.concurrency),
            f"{p.a:.2f}",
            f"{p.b:.2f}",
            f"{p.delta:+.2f}",
            "-" if p.percent is None else f"{p.percent:+.1f}%",
            Text(_arrow(p), style=style),
            Text(p.verdict + (" (invalid levels!)" if p.invalid else ""), style=verdict_style),
        )
    parts.append(fit(table))
    if cmp.only_a or cmp.only_b:
        parts.append(
            Text(f"unmatched levels left out: only A {cmp.only_a}, only B {cmp.only_b}", "dim")
        )
    machines = Table(
        title="machines" + (" (same machine)" if cmp.same_machine else " (different machines)")
    )
    machines.add_column("field")
    machines.add_column("A")
    machines.add_column("B")
    for row in cmp.machines:
        style = "bold yellow" if row.differs else ""
        machines.add_row(row.field, Text(row.a, style), Text(row.b, style))
    parts.append(fit(machines))
    return Group(*parts)


def comparison_to_json(cmp: Comparison) -> dict[str, Any]:
    data = cmp.model_dump(mode="json")
    for row, model in zip(data["machines"], cmp.machines, strict=True):
        row["differs"] = model.differs
    data["simulated"] = cmp.a_simulated or cmp.b_simulated
    return data
