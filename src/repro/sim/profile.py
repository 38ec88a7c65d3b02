"""Simulation profiles: the numbers behind the timing and acceptance model.

A profile is a small JSON file in `profiles/` (or any path given as the profile name). Every
number in it is an assumption, and its `assumptions` text says where each one comes from, so
a report built on the simulator can say what it stands for. Fields (times in milliseconds):

- `model`: what /model_info and /v1/models report (`model_type`, `architectures`,
  `context_length`, `eos_token_id`, `vocab_size`).
- `timing`: `prefill_fixed_ms`, `prefill_per_token_ms` (per uncached prompt token),
  `decode_fixed_ms`, `decode_per_req_ms` (per running request), `decode_per_1k_ctx_ms` (per
  1000 tokens held in the KV cache), `no_cuda_graph_fixed_factor` (applied to the fixed
  decode cost with `--disable-cuda-graph`), `max_running_requests`, `kv_tokens` (KV budget at
  `mem_fraction_static`), `mem_fraction_static`.
- `generation.mean_output_tokens`: mean length before the simulated EOS (when not ignored).
- `deployment`: what the numbers were stated for (gpus, gpu, interconnect, tp/pp/ep size); a
  server started with other parallel sizes logs a warning and still follows the profile, and
  `repro run R --sim` picks the profile whose deployment is the recipe's (sim/select.py). A
  profile describes one DP rank: `--dp-size N` runs N such schedulers.
- `provenance`: `calibrated: <the measured table it reproduces>` or `extrapolated: <from
  which profile, by which rule>`; `repro sim profiles` and every simulated run show it.
- `measured` (a calibrated profile's): the numbers measured on the real machine, each with
  the workload that produced it, which the timing model must reproduce within 5%
  (sim/calibration.py): `quantity` (`output_tok_s`), `value`, `running` (requests decoding),
  `context_tokens` (mean KV tokens each holds), `server_args` (SGLang flags of the
  measurement, e.g. `--disable-cuda-graph`), `category` (prompt category, for acceptance),
  `best_among` (a name pattern of profiles this measurement ranked first among, on the
  same workload), `source`. A run whose algorithm or CUDA graphs differ from every
  measurement is labelled extrapolated. `assumed`: what is not measured, one line each.
- `pipeline` (optional, PP): `stages` and `p2p_ms` (the hand-off between stages). A decode
  round (every request one step) then runs the batch as min(n, stages) micro-batches through
  the stages: `stages x (decode_fixed_ms / stages + decode_per_req_ms x micro-batch size +
  context / stages + p2p_ms)`, so one request pays every stage in turn (the bubble) and a
  full pipeline pays `decode_per_req_ms` per request, as without PP.
- `expert_parallel` (optional, EP): `a2a_fixed_ms` and `a2a_per_token_ms`, the MoE dispatch
  and combine all-to-all per decode step over the deployment's interconnect, the latter per
  token the step runs through the experts (requests x verified tokens).
- `speculative`: per algorithm (`"*"` is the fallback): `default_draft_tokens`, `draft_ms`
  (drafter cost per step), `verify_ms_per_token` (per request, per verified token beyond the
  first), `accept_length` per prompt category (mean tokens per verify step, bonus token
  included, at `reference_draft_tokens`), optional `accept_scale` ([[verified, factor], ...]:
  multiplies the mean accepted drafts, piecewise linear in the verified tokens per step).
- `power` (optional; per GPU, watts): `idle_w` all along, `busy_w` during a forward step plus
  `per_running_req_w` per running request, capped at `max_w` (the board limit). The simulator
  reports the energy this gives at `/repro_sim/power`, which `repro bench` records as
  simulated when NVML has no GPU to read (sim/power.py).
- `drafters`: per drafter repository (`--speculative-draft-model-path`, also matched by its
  last path parts, so a local snapshot of `org/name` finds `org/name`): `accept_length` per
  category (replacing the algorithm's, so two drafters of one algorithm can differ),
  optional `context_scale` ([[prompt tokens, factor], ...]: multiplies the mean accepted
  drafts, piecewise linear in the request's prompt tokens, so a drafter's acceptance can fall
  with the context), `assumption` (where the numbers come from) and `lossy` (the fault switch:
  accepted drafts are not the target's greedy tokens, for testing a lossless check).
  REPRO_SIM_LOSSY_DRAFTER set non-empty makes any drafter lossy.
"""

from __future__ import annotations

import bisect
import json
import math
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

PROFILE_DIR = Path(__file__).resolve().parent / "profiles"
CATEGORIES = ("chat", "code", "math", "random")
QUANTITY = "output_tok_s"  # what a profile's `measured` entries state


class ProfileError(ValueError):
    """A profile that cannot be found or read; the message says which and why."""


@dataclass(frozen=True)
class Timing:
    prefill_fixed_ms: float = 0.0
    prefill_per_token_ms: float = 0.0
    decode_fixed_ms: float = 0.0
    decode_per_req_ms: float = 0.0
    decode_per_1k_ctx_ms: float = 0.0
    no_cuda_graph_fixed_factor: float = 1.0
    max_running_requests: int = 256
    kv_tokens: int = 1_000_000
    mem_fraction_static: float = 0.88


@dataclass(frozen=True)
class Pipeline:
    stages: int = 1
    p2p_ms: float = 0.0

    def round_ms(self, n: int, fixed_ms: float, per_req_ms: float, ctx_ms: float) -> float:
        """A decode round of `n` requests as micro-batches through the stages."""
        stages = max(1, self.stages)
        micro = -(-max(1, n) // min(max(1, n), stages))  # requests per micro-batch
        stage = fixed_ms / stages + per_req_ms * micro + ctx_ms / stages + self.p2p_ms
        return stages * stage


@dataclass(frozen=True)
class ExpertParallel:
    a2a_fixed_ms: float = 0.0
    a2a_per_token_ms: float = 0.0


@dataclass(frozen=True)
class PowerProfile:
    idle_w: float = 0.0
    busy_w: float = 0.0
    per_running_req_w: float = 0.0
    max_w: float = 0.0  # 0: no cap


@dataclass(frozen=True)
class SpecProfile:
    default_draft_tokens: int = 4
    draft_ms: float = 0.0
    verify_ms_per_token: float = 0.0
    reference_draft_tokens: int = 4
    accept_length: dict[str, float] = field(default_factory=lambda: {"chat": 2.0})
    accept_scale: tuple[tuple[float, float], ...] = ()

    def mean_accept_length(self, category: str) -> float:
        table = self.accept_length
        value = table.get(category, table.get("chat", next(iter(table.values()), 1.0)))
        return max(1.0, float(value))


@dataclass(frozen=True)
class DrafterProfile:
    """One drafter repository's entry: its own acceptance (else the algorithm's)."""

    repo: str
    accept_length: dict[str, float] = field(default_factory=dict)
    assumption: str = ""
    lossy: bool = False
    context_scale: tuple[tuple[float, float], ...] = ()

    def context_factor(self, prompt_tokens: int) -> float:
        """What the mean accepted drafts are multiplied by at this context length."""
        return _interpolate(self.context_scale, float(prompt_tokens))

    def summary(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "accept_length": dict(self.accept_length),
            "assumption": self.assumption,
            "lossy": self.lossy,
            **(
                {"context_scale": [list(p) for p in self.context_scale]}
                if self.context_scale
                else {}
            ),
        }


@dataclass(frozen=True)
class Measurement:
    """One number measured on the real machine and the workload that produced it."""

    quantity: str
    value: float
    running: int
    context_tokens: int = 0
    server_args: tuple[str, ...] = ()
    category: str = "chat"
    best_among: str = ""
    source: str = ""

    def label(self) -> str:
        args = f", {' '.join(self.server_args)}" if self.server_args else ""
        return (
            f"{self.value:g} {self.quantity} at {self.running} running, "
            f"{self.context_tokens} context tokens{args}"
        )


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    assumptions: str
    path: str
    model: dict[str, Any]
    timing: Timing
    mean_output_tokens: int
    speculative: dict[str, SpecProfile]
    deployment: dict[str, Any] = field(default_factory=dict)
    power: PowerProfile | None = None
    drafters: dict[str, DrafterProfile] = field(default_factory=dict)
    provenance: str = ""
    pipeline: Pipeline | None = None
    expert_parallel: ExpertParallel | None = None
    measured: tuple[Measurement, ...] = ()
    assumed: tuple[str, ...] = ()

    def spec(self, algorithm: str) -> SpecProfile:
        return self.speculative.get(algorithm) or self.speculative.get("*") or SpecProfile()

    def drafter(self, path: str | None) -> DrafterProfile | None:
        """The entry of a drafter given as a repo id or a local path ending in one."""
        if not path:
            return None
        parts = path.rstrip("/").split("/")
        for repo, entry in self.drafters.items():
            if path == repo or parts[-len(repo.split("/")) :] == repo.split("/"):
                return entry
        return None

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "assumptions": self.assumptions,
            "provenance": self.provenance,
            "measured": [m.label() for m in self.measured],
            "assumed": list(self.assumed),
            "deployment": dict(self.deployment),
            "path": self.path,
        }


def _spec(data: dict[str, Any]) -> SpecProfile:
    scale = tuple((float(a), float(b)) for a, b in data.get("accept_scale", []))
    return SpecProfile(
        default_draft_tokens=int(data.get("default_draft_tokens", 4)),
        draft_ms=float(data.get("draft_ms", 0.0)),
        verify_ms_per_token=float(data.get("verify_ms_per_token", 0.0)),
        reference_draft_tokens=int(
            data.get("reference_draft_tokens", data.get("default_draft_tokens", 4))
        ),
        accept_length={str(k): float(v) for k, v in data.get("accept_length", {}).items()}
        or {"chat": 2.0},
        accept_scale=tuple(sorted(scale)),
    )


def _measurement(path: Path, data: Any) -> Measurement:
    known = {f.name for f in fields(Measurement)}
    if not isinstance(data, dict) or set(data) - known or not {"value", "running"} <= set(data):
        raise ProfileError(
            f"{path}: each `measured` entry is an object with `value` and `running` "
            f"(fields: {', '.join(sorted(known))})"
        )
    if data.get("quantity", QUANTITY) != QUANTITY:
        raise ProfileError(f"{path}: a measured `quantity` is {QUANTITY!r} (the only one modelled)")
    return Measurement(
        quantity=QUANTITY,
        value=float(data["value"]),
        running=int(data["running"]),
        context_tokens=int(data.get("context_tokens", 0)),
        server_args=tuple(str(a) for a in data.get("server_args", [])),
        category=str(data.get("category", "chat")),
        best_among=str(data.get("best_among", "")),
        source=str(data.get("source", "")),
    )


def profile_path(name: str) -> Path:
    candidate = Path(name)
    if candidate.suffix == ".json" and candidate.exists():
        return candidate
    path = PROFILE_DIR / f"{name}.json"
    if not path.exists():
        known = ", ".join(p.stem for p in sorted(PROFILE_DIR.glob("*.json")))
        raise ProfileError(f"unknown simulator profile {name!r} (known: {known})")
    return path


def load_profile(name: str | None = None) -> Profile:
    name = name or os.environ.get("REPRO_SIM_PROFILE") or "demo"
    path = profile_path(name)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ProfileError(f"cannot read simulator profile {path}: {e}") from None
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: a profile is a JSON object")
    timing_fields = set(Timing.__dataclass_fields__)
    unknown = set(data.get("timing", {})) - timing_fields
    if unknown:
        raise ProfileError(f"{path}: unknown timing field(s) {sorted(unknown)}")
    power = data.get("power")
    sections: dict[str, Any] = {
        "power": PowerProfile,
        "pipeline": Pipeline,
        "expert_parallel": ExpertParallel,
    }
    for key, kind in sections.items():
        unknown = set(data.get(key) or {}) - {f.name for f in fields(kind)}
        if unknown:
            raise ProfileError(f"{path}: unknown {key} field(s) {sorted(unknown)}")
    pipeline, ep = data.get("pipeline"), data.get("expert_parallel")
    return Profile(
        name=str(data.get("name") or path.stem),
        description=str(data.get("description", "")),
        assumptions=str(data.get("assumptions", "")),
        path=str(path),
        model=dict(data.get("model", {})),
        timing=Timing(**data.get("timing", {})),
        mean_output_tokens=int(data.get("generation", {}).get("mean_output_tokens", 256)),
        speculative={k.upper(): _spec(v) for k, v in data.get("speculative", {}).items()},
        deployment=dict(data.get("deployment", {})),
        power=PowerProfile(**{k: float(v) for k, v in power.items()}) if power else None,
        provenance=str(data.get("provenance", "")),
        pipeline=Pipeline(int(pipeline.get("stages", 1)), float(pipeline.get("p2p_ms", 0.0)))
        if pipeline
        else None,
        expert_parallel=ExpertParallel(**{k: float(v) for k, v in ep.items()}) if ep else None,
        measured=tuple(_measurement(path, m) for m in data.get("measured", [])),
        assumed=tuple(str(a) for a in data.get("assumed", [])),
        drafters={
            str(repo): DrafterProfile(
                repo=str(repo),
                accept_length={str(k): float(v) for k, v in d.get("accept_length", {}).items()},
                assumption=str(d.get("assumption", "")),
                lossy=bool(d.get("lossy", False)),
                context_scale=tuple(
                    sorted((float(a), float(b)) for a, b in d.get("context_scale", []))
                ),
            )
            for repo, d in data.get("drafters", {}).items()
        },
    )


def list_profiles() -> list[Profile]:
    return [load_profile(str(path)) for path in sorted(PROFILE_DIR.glob("*.json"))]


# ---- acceptance model ---------------------------------------------------------------------
# Drafts are accepted as a chain: draft i+1 only counts when draft i did, each with the same
# probability p. With `cap` drafts per step the number accepted is a truncated geometric
# variable with mean sum_{i=1..cap} p^i. p is solved so that the profile's mean holds at its
# reference draft tokens; the same p then gives the mean at other draft-token counts, scaled
# by `accept_scale` where a profile states one (e.g. DDTree budgets that hurt acceptance).


def _chain_mean(p: float, cap: int) -> float:
    if cap <= 0:
        return 0.0
    if p >= 1.0:
        return float(cap)
    return p * (1.0 - p**cap) / (1.0 - p)


def _solve_p(mean: float, cap: int) -> float:
    if cap <= 0 or mean <= 0.0:
        return 0.0
    if mean >= cap:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if _chain_mean(mid, cap) < mean:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _interpolate(points: tuple[tuple[float, float], ...], x: float) -> float:
    if not points:
        return 1.0
    xs = [p[0] for p in points]
    i = bisect.bisect_left(xs, x)
    if i == 0:
        return points[0][1]
    if i >= len(points):
        return points[-1][1]
    (x0, y0), (x1, y1) = points[i - 1], points[i]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0) if x1 != x0 else y1


def accept_cdf(
    spec: SpecProfile, category: str, cap: int, verified: int, context_factor: float = 1.0
) -> list[float]:
    """CDF over k = 0..cap accepted drafts per verify step (last entry 1.0); the mean
    accepted drafts scaled by `context_factor` (a drafter's `context_scale` at the prompt)."""
    reference_cap = max(1, spec.reference_draft_tokens - 1)
    p_ref = _solve_p(spec.mean_accept_length(category) - 1.0, reference_cap)
    mean = _chain_mean(p_ref, cap) * _interpolate(spec.accept_scale, float(verified))
    mean *= context_factor
    p = _solve_p(min(mean, float(cap)), cap)
    if cap <= 0:
        return [1.0]
    # P(k) = p^k (1-p) for k < cap, P(cap) = p^cap
    probs = [(p**k) * (1.0 - p) for k in range(cap)] + [p**cap]
    total = math.fsum(probs)
    cdf, running = [], 0.0
    for prob in probs:
        running += prob / total
        cdf.append(running)
    cdf[-1] = 1.0
    return cdf
