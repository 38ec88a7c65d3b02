"""A machine's verify-step cost, fitted from bench records of a forced-acceptance sweep, as a
simulator profile; and the leave-one-out check of how well it predicts a point it did not see.

Each valid level of a streaming `/generate` record is one point: the level's concurrency `n`
(requests in one step), the drafter's tokens per step `T` (0 without a drafter), the tokens a
step commits `a` (the forced length, else the level's pooled acceptance; 1 without a drafter)
and the step time, the median gap between stream chunks (one chunk per step). The fit is the
simulator's own step model (repro.sim.scheduler `Scheduler.decode_ms`) plus one term it lacks:

    step_ms = decode_fixed + n x decode_per_req
              + [drafter] (draft + n x verify_per_token x (T - 1) + n x accept_per_token x (a - 1))

solved by least squares on relative error. The first four go into the profile's `timing` and
`speculative` fields; `accept_per_token` (what committing more tokens costs) has no field in
the simulator and stays in the profile's `fit` section beside the sources and each point's
held-out error. A closed-loop level's throughput is then predicted as
`n x L / (ceil((L - 1) / a) x step_ms + n x prefill_ms)` for output length L: each request's
verify steps, and the prefill every request brings, which stalls the whole batch;
`prefill_ms` is fitted the same way from the levels' measured throughput. Records of the
simulator are read on its unscaled clock (durations divided by its time scale), so the code
can be checked against a known profile.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from repro.errors import ReproError
from repro.report.records import LoadedRun
from repro.runfolder import RunFolder

TERMS = ("decode_fixed_ms", "decode_per_req_ms", "draft_ms", "verify_ms_per_token")
ACCEPT_TERM = "accept_ms_per_token"


@dataclass(frozen=True)
class Point:
    """One level of a record, on the machine's (unscaled) clock."""

    source: str  # the record folder
    concurrency: int
    draft_tokens: int  # T; 0: no drafter
    committed: float  # tokens per step: the forced length, the pooled acceptance, or 1
    forced: bool
    step_ms: float
    output_tok_s: float
    output_len: int

    @property
    def name(self) -> str:
        if not self.draft_tokens:
            return f"no drafter c={self.concurrency}"
        how = "forced" if self.forced else "accept"
        return f"T={self.draft_tokens} {how} {self.committed:g} c={self.concurrency}"

    def features(self, with_accept: bool) -> list[float]:
        n, spec = float(self.concurrency), 1.0 if self.draft_tokens else 0.0
        row = [1.0, n, spec, spec * n * max(0, self.draft_tokens - 1)]
        return row + ([spec * n * (self.committed - 1.0)] if with_accept else [])


@dataclass(frozen=True)
class Fit:
    coefficients: dict[str, float]  # TERMS (and ACCEPT_TERM when the sweep varied acceptance)
    prefill_ms: float  # what each request's prefill stalls the batch for

    def step_ms(self, point: Point) -> float:
        names = [*TERMS, *([ACCEPT_TERM] if ACCEPT_TERM in self.coefficients else [])]
        values = point.features(ACCEPT_TERM in self.coefficients)
        return math.fsum(self.coefficients[k] * x for k, x in zip(names, values, strict=True))

    def output_tok_s(self, point: Point) -> float:
        """A closed-loop level's throughput: the verify steps, and the prefills."""
        cycle = verify_steps(point) * self.step_ms(point) + point.concurrency * self.prefill_ms
        return point.concurrency * point.output_len / (cycle / 1000.0)


def verify_steps(point: Point) -> int:
    """Steps after the prefill's token: each commits `committed` tokens."""
    return math.ceil((point.output_len - 1) / max(1.0, point.committed))


def _prefill_ms(data: list[Point]) -> float:
    """Least squares of `n x prefill = n x L / tok/s - steps x step` over the levels."""
    rows = [
        (p.concurrency, p.concurrency * p.output_len * 1000.0 / p.output_tok_s
         - verify_steps(p) * p.step_ms)
        for p in data
    ]  # fmt: skip
    return max(0.0, math.fsum(n * r for n, r in rows) / math.fsum(n * n for n, _ in rows))


@dataclass(frozen=True)
class HeldOut:
    point: str
    measured_tok_s: float
    predicted_tok_s: float

    @property
    def error(self) -> float:
        return self.predicted_tok_s / self.measured_tok_s - 1.0


def points(run: LoadedRun) -> list[Point]:
    """The valid streaming levels of one bench record, as fit points."""
    info = run.server_info
    if info is None or run.run.kind != "bench" or run.run.endpoint != "generate":
        return []
    scale = info.sim_time_scale if run.simulated and info.sim_time_scale else 1.0
    speculative = (info.speculative_algorithm or "NONE").upper() != "NONE"
    draft_tokens = int(info.speculative_num_draft_tokens or 0) if speculative else 0
    forced = run.forced
    output_len = getattr(run.run.workload, "output_len", None) or 0
    out = []
    for level in run.levels:
        gap = level.median_chunk_gap_ms
        if not level.valid or gap is None or not output_len:
            continue
        if draft_tokens:
            committed = forced.length if forced else level.accept_length
            if committed is None:
                continue
            committed = min(float(committed), float(draft_tokens))
        else:
            committed = 1.0
        out.append(
            Point(
                source=str(run.path),
                concurrency=level.concurrency,
                draft_tokens=draft_tokens,
                committed=committed,
                forced=forced is not None,
                step_ms=gap / scale,
                output_tok_s=level.output_throughput * scale,
                output_len=output_len,
            )
        )
    return out


def fit(data: list[Point]) -> Fit:
    """Least squares on relative step-time error; the acceptance term only when the sweep
    has more than one committed length on a drafter, the verify term only with two T."""
    spec = [p for p in data if p.draft_tokens]
    if not any(not p.draft_tokens for p in data) or not spec:
        raise ReproError(
            "the fit needs levels with and without a drafter",
            hint="give the forced sweep's records and the no-drafter record",
        )
    with_accept = len({p.committed for p in spec}) > 1
    x = np.array([p.features(with_accept) for p in data]) / np.array([[p.step_ms] for p in data])
    y = np.ones(len(data))
    if len({p.draft_tokens for p in spec}) < 2:
        x[:, 3] = 0.0  # one block size: the per-token verify cost folds into the others
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    names = [*TERMS, *([ACCEPT_TERM] if with_accept else [])]
    return Fit({k: float(v) for k, v in zip(names, beta, strict=True)}, _prefill_ms(data))


def leave_one_out(data: list[Point]) -> list[HeldOut]:
    """Each point predicted by a fit on all the others."""
    out = []
    for i, held in enumerate(data):
        rest = fit(data[:i] + data[i + 1 :])
        out.append(HeldOut(held.name, held.output_tok_s, rest.output_tok_s(held)))
    return out


def calibrated_profile(
    name: str, runs: list[LoadedRun], data: list[Point], result: Fit, held: list[HeldOut]
) -> dict[str, Any]:
    """The fit as a simulator profile (repro.sim.profile's format), labelled calibrated and
    naming its source records; the simulator ignores its `fit` section."""
    c = result.coefficients
    first = runs[0]
    gpus = first.machine.gpus if first.machine else []
    blocks = sorted({p.draft_tokens for p in data if p.draft_tokens})
    unforced = [p.committed for p in data if p.draft_tokens and not p.forced]
    sources = sorted({p.source for p in data})
    worst = max((abs(h.error) for h in held), default=0.0)
    return {
        "name": name,
        "description": f"Verify-step cost fitted from a forced-acceptance sweep of "
        f"{len(data)} levels.",
        "provenance": f"calibrated: {len(data)} levels of {len(sources)} bench records "
        f"(repro.report.verifyfit), leave-one-out output tok/s error at most {worst:.1%}",
        "assumptions": "Step time is the median stream-chunk gap at each level; levels ran "
        "as their records say (flags, CUDA graphs), no context-length term; prefill_fixed_ms "
        "is what a request's prefill stalls a closed-loop batch for, at the records' prompt "
        "length (no per-token term). Committing more "
        f"tokens per step costs {c.get(ACCEPT_TERM, 0.0):.4f} ms per request and token, "
        "which the simulator does not model (fit.accept_ms_per_token).",
        "model": {},
        "deployment": {
            "model_repo": str(first.server_info.model_path if first.server_info else ""),
            "gpus": len(gpus) or 1,
            "gpu": gpus[0].name if gpus else "unknown",
        },
        "timing": {
            "prefill_fixed_ms": result.prefill_ms,
            "decode_fixed_ms": c["decode_fixed_ms"],
            "decode_per_req_ms": c["decode_per_req_ms"],
            "no_cuda_graph_fixed_factor": 1.0,
        },
        "generation": {"mean_output_tokens": max(p.output_len for p in data)},
        "speculative": {
            "DFLASH": {
                "default_draft_tokens": blocks[-1],
                "reference_draft_tokens": blocks[-1],
                "draft_ms": c["draft_ms"],
                "verify_ms_per_token": c["verify_ms_per_token"],
                "accept_length": {
                    "chat": float(np.mean(unforced)) if unforced else 1.0,
                },
            }
        },
        "fit": {
            "coefficients": c,
            "prefill_ms": result.prefill_ms,
            "sources": sources,
            "points": [asdict(p) for p in data],
            "leave_one_out": [{**asdict(h), "error": h.error} for h in held],
        },
    }


def loo_lines(held: list[HeldOut]) -> list[str]:
    """The held-out check as lines of at most 80 columns."""
    lines = [f"{'held-out point':<34} {'measured':>10} {'predicted':>10} {'error':>8}"]
    lines += [
        f"{h.point:<34} {h.measured_tok_s:>10.1f} {h.predicted_tok_s:>10.1f} {h.error:>+8.1%}"
        for h in held
    ]
    errors = sorted(abs(h.error) for h in held)
    if errors:
        lines.append(
            f"{len(errors)} points: median |error| {errors[len(errors) // 2]:.1%}, "
            f"worst {errors[-1]:.1%}"
        )
    return lines


def record_folders(paths: list[Path]) -> list[Path]:
    """Record folders under each path (a folder holding run.json, or a folder of them)."""
    found: list[Path] = []
    for path in paths:
        folder = RunFolder(path)
        if folder.has_run():
            found.append(path)
        else:
            found += sorted(p.parent for p in path.rglob(folder.run_file.name))
    if not found:
        raise ReproError(f"no run records under {', '.join(map(str, paths))}")
    return found
