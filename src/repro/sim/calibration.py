"""A profile's timing model evaluated on the workload of each number it was calibrated to.

A calibrated profile lists what was measured on the real machine (`measured` in the profile
JSON: value, running requests, context tokens, server flags). Each is reproduced here by the
scheduler's own step costs (`Scheduler.decode_ms` with that many running requests holding that
many KV tokens), without a server and without waiting, so a test can hold every profile to
its measurements and an extrapolated profile to the rankings they showed (`best_among`).

A run is labelled calibrated only where its configuration is one a measurement covers: the
same speculative algorithm (or none) and the same CUDA-graph setting. Anything else (EP4 with
a drafter, TP8 with `--disable-cuda-graph`) is extrapolated from the calibrated numbers by the
profile's assumed factors, and `run_provenance` says so.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from repro.sim.config import SimConfig, resolve
from repro.sim.metrics import TokenizerMetrics
from repro.sim.profile import Measurement, Profile, list_profiles
from repro.sim.registry import Registry
from repro.sim.scheduler import Scheduler

TOLERANCE = 0.05  # a measurement is reproduced when the model is within 5% of it
MODEL_PATH = "repro-sim/calibration"


@dataclass(frozen=True)
class Check:
    """One measurement and what the profile's timing model gives on its workload."""

    profile: str
    measurement: Measurement
    predicted: float

    @property
    def error(self) -> float:
        return self.predicted / self.measurement.value - 1.0

    @property
    def ok(self) -> bool:
        return abs(self.error) <= TOLERANCE


def config_for(profile: Profile, server_args: tuple[str, ...]) -> SimConfig:
    """The simulator's settings for `server_args` on `profile` (its own algorithms known)."""
    algorithms = tuple(a for a in profile.speculative if a != "*")
    registry = Registry(("NONE", "EAGLE", "DFLASH", *algorithms), f"profile {profile.name}")
    return resolve(["--model-path", MODEL_PATH, *server_args], profile=profile, registry=registry)


def mean_accepted(cdf: list[float]) -> float:
    """Mean accepted drafts per verify step from the CDF over 0..cap."""
    below = 0.0
    mean = 0.0
    for k, at_most in enumerate(cdf):
        mean += k * (at_most - below)
        below = at_most
    return mean


def steady_decode_tok_s(
    profile: Profile,
    running: int,
    context_tokens: int,
    server_args: tuple[str, ...] = (),
    category: str = "chat",
) -> float:
    """Output tok/s of decode steps with `running` requests of `context_tokens` each (a
    verify step emits 1 + the mean accepted drafts of `category` per request)."""
    cfg = config_for(profile, server_args)
    scheduler = Scheduler(cfg, 0, TokenizerMetrics())
    scheduler.kv_used = running * context_tokens
    per_request = 1.0
    if cfg.algorithm is not None:
        per_request += mean_accepted(cfg.accept_cdfs[category])
    return running * per_request / (scheduler.decode_ms(running) / 1000.0)


def predict(profile: Profile, measurement: Measurement) -> float:
    """What the profile's timing model gives on the workload of `measurement`."""
    m = measurement
    return steady_decode_tok_s(profile, m.running, m.context_tokens, m.server_args, m.category)


def check(profile: Profile) -> list[Check]:
    """Each of the profile's measurements against its timing model."""
    return [Check(profile.name, m, predict(profile, m)) for m in profile.measured]


def ranking_conflicts(profiles: list[Profile] | None = None) -> list[str]:
    """Profiles that outrank a measurement stated as best among them, on its own workload."""
    known = list_profiles() if profiles is None else profiles
    conflicts = []
    for profile in known:
        for m in profile.measured:
            if not m.best_among:
                continue
            best = predict(profile, m)
            for other in known:
                if other.name == profile.name or not fnmatch.fnmatch(other.name, m.best_among):
                    continue
                theirs = steady_decode_tok_s(other, m.running, m.context_tokens)
                if theirs >= best:
                    conflicts.append(
                        f"{other.name} gives {theirs:.1f} {m.quantity} at {m.running} running, "
                        f"above {profile.name}'s {best:.1f}, which was measured best "
                        f"({m.source or m.label()})"
                    )
    return conflicts


def uncovered(cfg: SimConfig) -> list[str] | None:
    """What of `cfg` no measurement of its calibrated profile covers (empty: all covered);
    None when the profile is not calibrated or its measurements cannot be read here."""
    profile = cfg.profile
    if not profile.provenance.startswith("calibrated") or not profile.measured:
        return None
    try:
        measured = [config_for(profile, m.server_args) for m in profile.measured]
    except (SystemExit, ValueError):  # flags this SGLang's catalog lacks: say what it states
        return None
    covered = {(c.algorithm, c.cuda_graph) for c in measured}
    if (cfg.algorithm, cfg.cuda_graph) in covered:
        return []
    differs = []
    if cfg.algorithm not in {a for a, _ in covered}:
        what = cfg.algorithm or "none"
        differs.append(f"speculative {what} (acceptance and drafter cost assumed)")
    if cfg.cuda_graph not in {g for _, g in covered}:
        factor = profile.timing.no_cuda_graph_fixed_factor
        differs.append(
            "CUDA graphs " + ("on" if cfg.cuda_graph else f"off (fixed cost x{factor:g}, assumed)")
        )
    return differs or ["another configuration"]


def run_provenance(cfg: SimConfig) -> str:
    """The provenance of a server's numbers: the profile's, unless no measurement covers
    this configuration, which is then extrapolated from the calibrated numbers."""
    profile = cfg.profile
    differs = uncovered(cfg)
    if not differs:
        return profile.provenance
    labels = "; ".join(m.label() for m in profile.measured)
    return f"extrapolated: from {profile.name} (measured: {labels}) to {', '.join(differs)}"
