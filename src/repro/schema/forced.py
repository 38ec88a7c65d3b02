"""Forced acceptance: a speculative server launched with SGLang's SGLANG_SIMULATE_ACC_LEN.

Such a server commits a set number of tokens per verify step whatever its drafter proposes,
so its throughput measures the engine's verify step apart from drafter quality (InferenceX and
the Dynamo Kimi K2.6 recipe use it that way). A recipe asks for it under
`speculative.forced_acceptance`; a run against such a server records it, and every report
labels its acceptance "forced" so that it never stands unlabelled beside a measured one.
The environment names and values are SGLang 0.5.23's (srt/environ.py, srt/speculative/
spec_utils.py; repro.sim.forced mirrors how they are drawn).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from repro.schema.base import StrictModel

LENGTH_ENV = "SGLANG_SIMULATE_ACC_LEN"
METHOD_ENV = "SGLANG_SIMULATE_ACC_METHOD"
TOKEN_MODE_ENV = "SGLANG_SIMULATE_ACC_TOKEN_MODE"
FORCED_ENVS = (LENGTH_ENV, METHOD_ENV, TOKEN_MODE_ENV)
FORCED_LABEL = "forced"
Method = Literal["match-expected", "multinomial"]
TokenMode = Literal["fixed", "real-draft-token"]
DEFAULT_METHOD: Method = "match-expected"
DEFAULT_TOKEN_MODE: TokenMode = "fixed"
DEFAULTS = (DEFAULT_METHOD, DEFAULT_TOKEN_MODE)


_LENGTH = (
    "Tokens committed per verify step, the bonus token included (SGLang's acceptance length); "
    "clamped by SGLang to the draft tokens (DFLASH: the block size)."
)


class ForcedAcceptance(StrictModel):
    """The acceptance length SGLang is told to produce, and how it draws it."""

    length: float = Field(ge=1, le=1024, description=_LENGTH)
    method: Method = Field(
        DEFAULT_METHOD,
        description="match-expected: floor or ceil of length per step, the mean exact; "
        "multinomial: a normal draw around length (sd 1), rounded.",
    )
    token_mode: TokenMode = Field(
        DEFAULT_TOKEN_MODE,
        description="fixed: every committed token is id 100 (no EOS ends a request); "
        "real-draft-token: the drafts and the target's bonus token.",
    )

    def env(self) -> dict[str, str]:
        """The server's environment that asks SGLang for this."""
        return {
            LENGTH_ENV: str(self.length),
            METHOD_ENV: self.method,
            TOKEN_MODE_ENV: self.token_mode,
        }

    def label(self) -> str:
        """e.g. `forced 4`, or `forced 4 multinomial real-draft-token` off the defaults."""
        shown = [v for v in (self.method, self.token_mode) if v not in DEFAULTS]
        return " ".join([FORCED_LABEL, f"{self.length:g}", *shown])
