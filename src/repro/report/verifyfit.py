"""A machine's verify-step cost, fitted from bench records of a forced-acceptance sweep, as a
simulator profile; and the leave-one-out check of how well it predicts a point it did not see.

Each valid level of a streaming `/generate` record is one point: the mean concurrency the
level achieved `n` (bench_serving's `concurrency`, sum of E2E / duration: a level whose
requests did not all overlap, or whose span the client's start or end stretched, ran fewer
at once than it offered), the drafter's tokens per step `T` (0 without a drafter), the tokens
a step commits `a` (the forced length, else the level's pooled acceptance; 1 without a
drafter), the step time (the mean gap between stream chunks, one chunk per step: what a
request's time after its first token is made of) and the mean time to the first token. The
step fit is the simulator's own step model (repro.sim.scheduler `Scheduler.decode_ms`) plus
one term it lacks:

    step_ms = decode_fixed + n x decode_per_req
              + [drafter] (draft + n x verify_per_token x (T - 1) + n x accept_per_token x (a - 1))

solved by least squares on relative error. The first four go into the profile's `timing` and
`speculative` fields; `accept_per_token` (what committing more tokens costs) has no field in
the simulator and stays in the profile's `fit` section beside the sources and each point's
held-out error.

The first token follows the closed loop, as the per-request lines of the H100 sweep show it:
a level's first request reaches the scheduler alone and is prefilled alone, the others arrive
while it runs and are prefilled after it, in batches. So

    ttft_ms = prefill + (n - 1) / n x prefill_wait + n x prefill_per_req

(`prefill_wait`: what the n - 1 later requests wait for the first's prefill). On the H100
records it predicts a held-out level's first token within a median 9 %, where `prefill + n x
per_req` (all prompts in one batch) gave 24 %: c=1 about 21 ms, c=4 about 50, c=48 about 95.

A closed-loop level's throughput is then predicted by Little's law, `n x L / (ttft +
ceil((L - 1) / a) x step_ms)` for output length L. Records of the simulator are read on its
unscaled clock (durations divided by its time scale), so the code can be checked against a
known profile.

Some levels measured something other than the step cost, and their own records say so
(`Point.anomaly`, judged without the fit): the server paused (the mean first token took more
than `PAUSE_STEPS` of the level's own median steps: a closed loop's first token waits for the
prefills ahead of it, at most 20 steps on the H100 records; the paused ones waited 33 to 105,
up to 0.74 s on average), or the server queued (the level held fewer than `QUEUE_SHARE` of
the requests it offered at once: on the H100 the DFLASH servers admitted 45-47 of 48, the
rest waited for the whole batch to finish). They are left out of the fit, and the held-out
summary is given with them and without them, each named with what it measured.

What the fit cannot beat is the spread of the same level measured on two launches (`twins`):
on the H100 the same server configuration, launched again on another H100, gave output tok/s
up to 28 % apart at c=48 and 14 % at c=1; within one launch, servers doing the same work
(T=8 and T=16 forced 2 at c=4: the fit finds the block size costs nothing) ran 16 % apart.
"""

from __future__ import annotations

import math
import textwrap
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from repro.errors import ReproError
from repro.report.records import LoadedRun
from repro.runfolder import RunFolder

TERMS = ("decode_fixed_ms", "decode_per_req_ms", "draft_ms", "verify_ms_per_token")
ACCEPT_TERM = "accept_ms_per_token"
PAUSE_STEPS = 25.0  # a mean first token longer than this many of the level's steps: a pause
QUEUE_SHARE = 0.9  # a level that held fewer than this share of its offered requests at once


@dataclass(frozen=True)
class Point:
    """One level of a record, on the machine's (unscaled) clock."""

    source: str  # the record folder
    concurrency: int  # offered (the level's name)
    draft_tokens: int  # T; 0: no drafter
    committed: float  # tokens per step: the forced length, the pooled acceptance, or 1
    forced: bool
    step_ms: float  # the mean stream-chunk gap
    output_tok_s: float
    output_len: int
    running: float  # the mean concurrency achieved
    ttft_ms: float  # the mean time to the first token
    prompt_tokens: float  # a request's, on average
    median_step_ms: float  # the median stream-chunk gap: a step without a prefill beside it
    requests: int  # completed in the level

    @property
    def name(self) -> str:
        if not self.draft_tokens:
            return f"no drafter c={self.concurrency}"
        how = "forced" if self.forced else "accept"
        return f"T={self.draft_tokens} {how} {self.committed:g} c={self.concurrency}"

    @property
    def anomaly(self) -> str | None:
        """What the level measured instead of the step cost, from its own records; None: it
        measured the step cost."""
        steps = self.ttft_ms / self.median_step_ms
        if steps > PAUSE_STEPS:
            return f"paused: first token {self.ttft_ms:.0f} ms, {steps:.0f} steps"
        offered = min(self.concurrency, self.requests)
        if self.running < QUEUE_SHARE * offered:
            return f"queued: {self.running:.1f} of {offered} at once"
        return None

    def features(self, with_accept: bool) -> list[float]:
        n, spec = self.running, 1.0 if self.draft_tokens else 0.0
        row = [1.0, n, spec, spec * n * max(0, self.draft_tokens - 1)]
        return row + ([spec * n * (self.committed - 1.0)] if with_accept else [])

    def first_token_features(self) -> list[float]:
        n = self.running
        return [1.0, (n - 1.0) / n, n]


@dataclass(frozen=True)
class Fit:
    coefficients: dict[str, float]  # TERMS (and ACCEPT_TERM when the sweep varied acceptance)
    prefill_ms: float  # the first token's fixed part
    prefill_per_req_ms: float  # and its part per request prefilled with it
    prefill_wait_ms: float = 0.0  # what the requests after a level's first wait for its prefill

    def step_ms(self, point: Point) -> float:
        names = [*TERMS, *([ACCEPT_TERM] if ACCEPT_TERM in self.coefficients else [])]
        values = point.features(ACCEPT_TERM in self.coefficients)
        return math.fsum(self.coefficients[k] * x for k, x in zip(names, values, strict=True))

    def ttft_ms(self, point: Point) -> float:
        beta = (self.prefill_ms, self.prefill_wait_ms, self.prefill_per_req_ms)
        return math.fsum(b * x for b, x in zip(beta, point.first_token_features(), strict=True))

    def output_tok_s(self, point: Point) -> float:
        """A closed-loop level's throughput (Little's law): `running` requests at once, each
        its first token and then its verify steps."""
        e2e = self.ttft_ms(point) + verify_steps(point) * self.step_ms(point)
        return point.running * point.output_len / (e2e / 1000.0)


def verify_steps(point: Point) -> int:
    """Steps after the prefill's token: each commits `committed` tokens."""
    return math.ceil((point.output_len - 1) / max(1.0, point.committed))


def _relative_lstsq(rows: list[list[float]], measured: list[float]) -> list[float]:
    """Coefficients minimising the squared relative error of `rows @ beta` to `measured`."""
    x = np.array(rows) / np.array(measured)[:, None]
    beta, *_ = np.linalg.lstsq(x, np.ones(len(measured)), rcond=None)
    return [float(b) for b in beta]


@dataclass(frozen=True)
class HeldOut:
    point: str
    measured_tok_s: float
    predicted_tok_s: float
    ttft_ratio: float  # the measured mean time to the first token over the fit's
    anomaly: str | None = None  # Point.anomaly: what the level measured instead
    source: str = ""

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
        gap, ttft = level.mean_chunk_gap_ms, level.mean_ttft_ms
        if not level.valid or gap is None or ttft is None or not output_len:
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
                running=level.achieved_concurrency or float(level.concurrency),
                ttft_ms=ttft / scale,
                prompt_tokens=(level.total_input_tokens or 0) / max(1, level.completed),
                median_step_ms=(level.median_chunk_gap_ms or gap) / scale,
                requests=level.completed,
            )
        )
    return out


def fit(data: list[Point]) -> Fit:
    """Least squares on relative step-time and first-token error over the points that
    measured the step cost (no `anomaly`); the acceptance term only when the sweep has more
    than one committed length on a drafter, the verify term only with two T, the first
    arrival's wait only with three concurrencies."""
    data = [p for p in data if p.anomaly is None]
    spec = [p for p in data if p.draft_tokens]
    if not any(not p.draft_tokens for p in data) or not spec:
        raise ReproError(
            "the fit needs levels with and without a drafter that measured the step cost",
            hint="give the forced sweep's records and the no-drafter record",
        )
    with_accept = len({p.committed for p in spec}) > 1
    rows = [p.features(with_accept) for p in data]
    if len({p.draft_tokens for p in spec}) < 2:
        for row in rows:
            row[3] = 0.0  # one block size: the per-token verify cost folds into the others
    beta = _relative_lstsq(rows, [p.step_ms for p in data])
    names = [*TERMS, *([ACCEPT_TERM] if with_accept else [])]
    first_rows = [p.first_token_features() for p in data]
    if len({p.concurrency for p in data}) < 3:
        for row in first_rows:
            row[1] = 0.0  # two concurrencies: the first arrival's wait folds into the others
    first = _relative_lstsq(first_rows, [p.ttft_ms for p in data])
    return Fit(
        {k: v for k, v in zip(names, beta, strict=True)},
        prefill_ms=first[0],
        prefill_per_req_ms=first[2],
        prefill_wait_ms=first[1],
    )


def leave_one_out(data: list[Point]) -> list[HeldOut]:
    """Each point predicted by a fit on all the others (those with an anomaly too, which
    the fits leave out)."""
    out = []
    for i, held in enumerate(data):
        rest = fit(data[:i] + data[i + 1 :])
        ratio = held.ttft_ms / max(rest.ttft_ms(held), 1e-9)
        predicted = rest.output_tok_s(held)
        out.append(
            HeldOut(held.name, held.output_tok_s, predicted, ratio, held.anomaly, held.source)
        )
    return out


def calibrated_profile(
    name: str, runs: list[LoadedRun], data: list[Point], result: Fit, held: list[HeldOut]
) -> dict[str, Any]:
    """The fit as a simulator profile (repro.sim.profile's format), labelled calibrated and
    naming its source records; the simulator ignores its `fit` section."""
    c = result.coefficients
    first = runs[0]
    gpus = first.machine.gpus if first.machine else []
    measured = [p for p in data if p.anomaly is None]
    blocks = sorted({p.draft_tokens for p in measured if p.draft_tokens})
    unforced = [p.committed for p in measured if p.draft_tokens and not p.forced]
    sources = sorted({p.source for p in data})
    worst = error_band(held)[1] if held else 0.0
    prompt = float(np.mean([p.prompt_tokens for p in measured])) or 1.0
    odd = len(data) - len(measured)
    left = f" ({odd} paused or queued levels left out)" if odd else ""
    return {
        "name": name,
        "description": f"Verify-step cost fitted from a forced-acceptance sweep of "
        f"{len(measured)} levels.",
        "provenance": f"calibrated: {len(measured)} levels of {len(sources)} bench records "
        f"(repro.report.verifyfit), leave-one-out output tok/s error at most {worst:.1%}"
        f"{left}",
        "assumptions": "Step time is the mean stream-chunk gap at each level, at the mean "
        "concurrency it achieved; levels ran as their records say (flags, CUDA graphs), no "
        "context-length term; the first token costs prefill_fixed_ms plus "
        f"prefill_per_token_ms for each of the {prompt:.0f} prompt tokens of every request "
        "prefilled with it (the records' prompt length only), and the requests after a "
        f"level's first wait {result.prefill_wait_ms:.1f} ms more for its prefill "
        "(fit.prefill_wait_ms). Committing more "
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
            "prefill_per_token_ms": result.prefill_per_req_ms / prompt,
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
            "prefill_per_req_ms": result.prefill_per_req_ms,
            "prefill_wait_ms": result.prefill_wait_ms,
            "sources": sources,
            "points": [asdict(p) for p in data],
            "leave_one_out": [{**asdict(h), "error": h.error} for h in held],
        },
    }


def loo_lines(held: list[HeldOut]) -> list[str]:
    """The held-out check as lines of at most 80 columns: each point (`ttft x`: its first
    token's time over the fit's) under its records' folder, then the summary, over all points
    and over those that measured the step cost (the others named with what they measured:
    no step model predicts a pause or a server's queue)."""
    lines = [
        f"{'held-out point':<30} {'measured':>10} {'predicted':>10} {'error':>8} {'ttft x':>7}"
    ]
    lines += _by_folder(
        (
            h.source,
            f"{h.point:<30} {h.measured_tok_s:>10.1f} {h.predicted_tok_s:>10.1f} "
            f"{h.error:>+8.1%} {h.ttft_ratio:>7.1f}",
        )
        for h in held
    )
    lines.append(_summary(f"{len(held)} points", held))
    odd = [h for h in held if h.anomaly]
    if odd and len(odd) < len(held):
        lines += textwrap.wrap(
            f"not the step cost (first token over {PAUSE_STEPS:g} of the level's median "
            f"steps: paused; under {QUEUE_SHARE:.0%} of the offered requests at once: "
            "queued), left out of every fit:",
            80,
        )
        lines += _by_folder((h.source, f"  {h.point:<28} {h.anomaly}") for h in odd)
        lines.append(_summary("without them", [h for h in held if not h.anomaly]))
    return lines


def _by_folder(rows: Iterable[tuple[str, str]]) -> list[str]:
    """Lines under a `-- folder` line wherever the record folders' parent changes."""
    out, folder = [], None
    for source, line in rows:
        if Path(source).parent.name != folder:
            folder = Path(source).parent.name
            out.append(f"-- {folder}")
        out.append(line)
    return out


def error_band(held: list[HeldOut]) -> tuple[float, float]:
    """The held-out |error| of the levels that measured the step cost (all levels when none
    did): median and worst; what a prediction from the fit is good to."""
    return _median_worst(
        [abs(h.error) for h in held if h.anomaly is None] or [abs(h.error) for h in held]
    )


def _median_worst(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return ordered[len(ordered) // 2], ordered[-1]


def _summary(what: str, held: list[HeldOut]) -> str:
    if not held:
        return f"{what}: none"
    median, worst = _median_worst([abs(h.error) for h in held])
    return f"{what}: median |error| {median:.1%}, worst {worst:.1%}"


def twins(data: list[Point]) -> list[tuple[str, list[float]]]:
    """The same level (drafter block, forced length or the drafter's own acceptance,
    concurrency, output length) measured in more than one record folder, without anomaly:
    (its name, output tok/s of each); how far apart they are bounds what any fit can reach."""
    groups: dict[tuple[Any, ...], list[Point]] = defaultdict(list)
    for p in data:
        if p.anomaly is None:
            how = p.committed if p.forced or not p.draft_tokens else None
            groups[(p.draft_tokens, how, p.concurrency, p.output_len)].append(p)
    out = []
    for group in groups.values():
        if len({Path(p.source).parent for p in group}) > 1:
            first = group[0]
            name = f"T={first.draft_tokens} accept c={first.concurrency}"
            if first.forced or not first.draft_tokens:
                name = first.name
            out.append((name, [p.output_tok_s for p in group]))
    return out


def twin_lines(data: list[Point]) -> list[str]:
    """The twins' spread (largest over smallest output tok/s), at most 80 columns."""
    pairs = twins(data)
    if not pairs:
        return []
    lines = ["the same level in two launches (output tok/s), the floor of any fit:"]
    spreads = []
    for name, values in pairs:
        spread = max(values) / min(values) - 1.0
        spreads.append(spread)
        shown = " / ".join(f"{v:.1f}" for v in values)
        lines.append(f"  {name:<28} {shown:<30} {spread:>7.1%}")
    median, worst = _median_worst(spreads)
    lines.append(f"spread: median {median:.1%}, worst {worst:.1%}")
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
