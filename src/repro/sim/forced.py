"""Forced acceptance: SGLang's `SGLANG_SIMULATE_ACC_LEN` benchmark knob, as the simulator
honours it, so a forced run measures a verify step's cost apart from any drafter.

Mirrors sglang 0.5.23:
- srt/environ.py: `SGLANG_SIMULATE_ACC_LEN = EnvFloat(-1)` (on only when > 0; a value that is
  no float warns and falls back to -1), `SGLANG_SIMULATE_ACC_METHOD = EnvStr("match-expected")`,
  `SGLANG_SIMULATE_ACC_TOKEN_MODE = EnvStr("fixed")`.
- srt/speculative/spec_utils.py `sample_simulated_acc_len`: one commit length (accepted drafts
  plus the bonus token) per verify step, for the whole batch, in [1, max_len]. "match-expected"
  takes floor or floor + 1 of the clamped value, weighted so that the mean is the value;
  "multinomial" rounds a normal draw (mean the value, sd 1) clamped to [1, max_len]; any other
  method raises at the first verify step.
- srt/speculative/dflash_utils.py `apply_dflash_simulated_acceptance` (max_len = block size)
  and eagle_utils.py (max_len = steps + 1): token mode "fixed" commits token id 100 for every
  position, "real-draft-token" the drafts and the target's bonus; dflash_worker_v2.py refuses
  another token mode at start (`check_simulate_acc_token_mode`).
The simulator refuses a bad method or token mode at start-up (SGLang fails the method at the
first verify step instead), and like SGLang ignores the knob without speculative decoding.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

LENGTH_ENV = "SGLANG_SIMULATE_ACC_LEN"
METHOD_ENV = "SGLANG_SIMULATE_ACC_METHOD"
TOKEN_MODE_ENV = "SGLANG_SIMULATE_ACC_TOKEN_MODE"
METHODS = ("match-expected", "multinomial")
TOKEN_MODES = ("fixed", "real-draft-token")
FIXED_TOKEN_ID = 100  # dflash_utils.py fixed_token_id; eagle_utils predict.fill_(100)


@dataclass(frozen=True)
class ForcedAcceptance:
    """The forced commit length per verify step and how it is drawn."""

    length: float
    method: str = METHODS[0]
    token_mode: str = TOKEN_MODES[0]

    @property
    def fixed_token(self) -> int | None:
        """The token every verify step commits in "fixed" mode; None: real tokens."""
        return FIXED_TOKEN_ID if self.token_mode == "fixed" else None

    def draw(self, rng: random.Random, max_len: int) -> int:
        """One verify step's commit length, in [1, max_len] (sample_simulated_acc_len)."""
        max_len = max(1, max_len)
        if self.method == "multinomial":
            return round(min(max(rng.gauss(self.length, 1.0), 1.0), float(max_len)))
        value = max(1.0, min(float(max_len), self.length))
        lower = int(value // 1)
        if lower >= max_len:
            return lower
        return lower + 1 if rng.random() < value - lower else lower

    def summary(self) -> dict[str, Any]:
        return {"length": self.length, "method": self.method, "token_mode": self.token_mode}


def forced_from_env(environ: Mapping[str, str]) -> tuple[ForcedAcceptance | None, str | None]:
    """The forced acceptance the environment asks for (None: off) and a warning, if any;
    ValueError for a method or token mode SGLang refuses."""
    raw = environ.get(LENGTH_ENV)
    if raw is None:
        return None, None
    try:
        length = float(raw)
    except ValueError:
        return None, f'Invalid value for {LENGTH_ENV}: "{raw}" is not a valid float value'
    if not length > 0:
        return None, None
    method = environ.get(METHOD_ENV, METHODS[0])
    mode = environ.get(TOKEN_MODE_ENV, TOKEN_MODES[0])
    if method not in METHODS:
        raise ValueError(f"Invalid simulate_acc_method: {method}")
    if mode not in TOKEN_MODES:
        raise ValueError(
            f"Invalid {TOKEN_MODE_ENV} {mode!r}; expected 'fixed' or 'real-draft-token'."
        )
    return ForcedAcceptance(length, method, mode), None
