"""The rule about forced acceptance (SGLANG_SIMULATE_ACC_LEN): asked for where records see it,
and no longer than what a verify step can commit."""

from __future__ import annotations

from repro.recipe.rulebase import Context, Issue, err, warn
from repro.recipe.rules_speculative import draft_tokens
from repro.schema.forced import FORCED_ENVS


def rule_forced_acceptance(ctx: Context) -> list[Issue]:
    """Forced acceptance is asked for by `speculative.forced_acceptance`, not by `env`, so that
    records label it; a length above the draft tokens is clamped by SGLang (spec_utils.py
    `sample_simulated_acc_len`, max_len = block size for DFLASH)."""
    out = [
        err(
            ("env", key),
            f"{key} forces the acceptance length; set speculative.forced_acceptance instead, "
            "so that records and reports label the acceptance forced",
            "forced-acceptance",
        )
        for key in ctx.recipe.env
        if key in FORCED_ENVS
    ]
    spec = ctx.recipe.speculative
    forced = spec.forced_acceptance if spec else None
    tokens = draft_tokens(ctx)
    if forced is not None and tokens is not None and forced.length > tokens:
        out.append(
            warn(
                ("speculative", "forced_acceptance", "length"),
                f"length {forced.length:g} is above the {tokens} draft tokens per step: "
                f"SGLang commits at most {tokens} (spec_utils.py sample_simulated_acc_len)",
                "forced-acceptance",
            )
        )
    return out
