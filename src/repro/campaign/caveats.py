"""What a predicted point's numbers stand on, said beside them in the plan.

- The calibration point: where the point runs a configuration its profile was calibrated on
  (the same speculative algorithm, verified tokens and CUDA-graph setting as a `measured`
  entry), the measured number, what the timing model gives there, and what the sweep's level
  at that concurrency predicts, with the reason the two differ: a level's tok/s counts each
  request's prefill, and a level of N requests sends its N prompts at once and pays their
  prefill before decoding; the calibration is steady decode. At one running request the
  level's decode alone (1 / mean TPOT) is the calibration's own quantity; with speculative
  decoding it moves with the level's acceptance, so the caveat states the tokens per verify
  step drawn beside the model's mean, and why they differ: another prompt category than the
  calibration's, or the draws of the level's requests (a sample) with each request's last
  step cut at its output length (a whole step's cost for what is left).
  Above one running request the level (a wave of prefills, then decode) is stated beside
  the model's steady decode there, the figure to hold against a measured steady decode, with
  the prefill speed the wave pays (assumed, where the profile's `assumed` names the prefill).
- An assumed ranking: where the point's numbers are extrapolated (a profile derived by a rule
  from another's measurements, or a configuration no measurement covers,
  `sim.calibration.run_provenance`), where it ranks against the other points is the rule's
  assumption, not a prediction.
- The assumed inputs (`assumed_inputs`): the same facts as short names, which every verdict
  the point feeds carries (repro.campaign.assumed).
"""

from __future__ import annotations

import re

from repro.schema.level import Level
from repro.sim.calibration import config_for, mean_accepted, predict, uncovered
from repro.sim.config import SimConfig
from repro.sim.profile import Measurement

ASSUMED = "ranking assumed"  # how a point whose numbers are extrapolated is labelled


def _key(cfg: SimConfig) -> tuple[str | None, int, bool]:
    return (cfg.algorithm, cfg.verify_tokens if cfg.algorithm else 1, cfg.cuda_graph)


def calibration_point(cfg: SimConfig) -> Measurement | None:
    """The profile's measurement taken in the configuration `cfg` runs, if any."""
    for m in cfg.profile.measured:
        try:
            measured = config_for(cfg.profile, m.server_args)
        except (SystemExit, ValueError):  # flags the simulator's catalog lacks
            continue
        if _key(measured) == _key(cfg):
            return m
    return None


def calibration_caveat(
    cfg: SimConfig, levels: list[Level], category: str = "chat", prompt_tokens: int = 0
) -> str | None:
    """The calibration point beside the level at its concurrency, and why they differ (the
    level's prompts: `category`, `prompt_tokens` long)."""
    m = calibration_point(cfg)
    if m is None:
        return None
    line = (
        f"calibrated: {m.value:g} tok/s in steady decode at {m.running} running "
        f"(the model gives {predict(cfg.profile, m):.1f})"
    )
    level = next((lv for lv in levels if lv.concurrency == m.running), None)
    if level is None or level.output_throughput is None or level.median_ttft_ms is None:
        return line
    ttft = level.median_ttft_ms / 1000.0
    predicted = f"the c={m.running} level predicts {level.output_throughput:.0f}"
    prefill = f"{ttft:.2f} s median to the first token, {_prefill_speed(cfg)}"
    if m.running == 1 and level.mean_tpot_ms:
        return (
            f"{line}; {predicted}: it counts each request's prefill ({prefill}); "
            f"decode alone {1000.0 / level.mean_tpot_ms:.0f} tok/s (1 / mean TPOT)"
            f"{_acceptance(cfg, m, level, category, prompt_tokens)}"
        )
    return (
        f"{line}; {predicted} beside {predict(cfg.profile, m):.0f} in steady decode: its "
        f"{m.running} prompts are sent at once and pay their prefill ({prefill}) "
        "before decode"
    )


def _prefill_speed(cfg: SimConfig) -> str:
    """`at an assumed prefill speed of ~5,000 tok/s` (`a` where it is not assumed)."""
    per_token = cfg.profile.timing.prefill_per_token_ms
    speed = f"~{1000.0 / per_token:,.0f} tok/s" if per_token > 0 else "no cost per token"
    return f"at {'an assumed' if prefill_assumed(cfg) else 'a'} prefill speed of {speed}"


def _acceptance(
    cfg: SimConfig, m: Measurement, level: Level, category: str, prompt_tokens: int
) -> str:
    """The level's tokens per verify step against the model's mean, and why they differ."""
    cdf = cfg.accept_cdf_for(category, prompt_tokens)
    if cdf is None or level.accept_length is None or not level.completed:
        return ""
    expected = 1.0 + mean_accepted(cdf)
    if category != m.category:
        why = f"{category} prompts; the calibration's were {m.category}"
    else:
        output_len = round(level.total_output_tokens / level.completed)
        why = (
            f"the draws of {level.completed} requests, each one's last step cut at "
            f"{output_len} tokens"
        )
    return (
        f", at {level.accept_length:.2f} tokens a verify step where the model's mean is "
        f"{expected:.2f} ({why})"
    )


def prefill_assumed(cfg: SimConfig) -> bool:
    """Whether the profile's prefill speed is assumed: a line of its `assumed` names it."""
    return _names(cfg, "prefill")


def _names(cfg: SimConfig, word: str) -> bool:
    """Whether a line of the profile's `assumed` (what is not measured) names `word`."""
    return any(word in line.lower() for line in cfg.profile.assumed)


def assumed_inputs(cfg: SimConfig) -> list[str]:
    """What a point predicted with `cfg` assumes, in short names: every number of a profile
    derived by a rule; else what no measurement covers and an assumed prefill speed."""
    profile = cfg.profile
    dp = ["DP attention (not modelled)"] if _dp_attention(cfg) else []
    if profile.provenance.startswith("extrapolated"):
        return [f"every number of profile {profile.name} (derived by a rule)", *dp]
    if not profile.provenance.startswith("calibrated"):
        return [f"every number of profile {profile.name} (not calibrated)", *dp]
    differs = [re.sub(r",? assumed\)$", ")", d) for d in uncovered(cfg) or []]
    speculative = any(d.startswith("speculative") for d in differs)
    if cfg.algorithm and not speculative and _names(cfg, "acceptance"):
        differs.append(f"{cfg.algorithm} acceptance")
    return differs + dp + (["prefill speed"] if prefill_assumed(cfg) else [])


def _dp_attention(cfg: SimConfig) -> bool:
    """DP attention asked for, which the simulator runs as without it."""
    args = cfg.args
    return bool(getattr(args, "enable_dp_attention", False)) or (
        int(getattr(args, "attn_dp_size", None) or 1) > 1
    )


def ranking_caveat(cfg: SimConfig) -> str | None:
    """The label of a point whose numbers are extrapolated, with why."""
    profile = cfg.profile
    dp = ["DP attention, which the simulator does not model"] if _dp_attention(cfg) else []
    if profile.provenance.startswith("extrapolated"):
        also = f" ({dp[0]})" if dp else ""
        return f"{ASSUMED}: profile {profile.name} is derived by a rule, not measured{also}"
    differs = (uncovered(cfg) or []) + dp
    if not differs:
        return None
    return f"{ASSUMED}: no measurement of {profile.name} covers {', '.join(differs)}"


def caveats(
    cfg: SimConfig, levels: list[Level], category: str = "chat", prompt_tokens: int = 0
) -> list[str]:
    """Every caveat of a point predicted with `cfg` on prompts of `category`,
    `prompt_tokens` long, in the order the plan prints them."""
    calibration = calibration_caveat(cfg, levels, category, prompt_tokens)
    return [c for c in (calibration, ranking_caveat(cfg)) if c]
