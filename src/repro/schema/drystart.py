"""What SGLang's own start-up made of a recipe, without a GPU (the engine dry-start).

Written by repro.realengine.drystart from the JSON its engine-side probe prints
(realengine/drystart_probe.py), shown by `repro recipe check` and `repro recipe render
--resolved`, and kept in the lock (`Lock.resolved`), so that a run elsewhere can be held
against what SGLang decided here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ReproModel(BaseModel):
    """Read back from the probe's JSON and from locks: unknown keys are an error."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ResolvedValue(ReproModel):
    """One option SGLang's start-up changed: what the argv asked, what it became, and the hook
    that decided it (0.5.23 records its hooks' declarations; older releases do not)."""

    asked: Any = None
    resolved: Any = None
    by: str | None = None


class Refusal(ReproModel):
    """SGLang's own refusal, at the step of its start-up where it came."""

    step: str = Field(description="parse, prepare_server_args, resolve_once, ..., model_config")
    type: str = Field(description="The exception's class, e.g. ValueError.")
    message: str
    where: str = Field(default="", description="The SGLang source line that raised.")


class ModelClass(ReproModel):
    """The model class SGLang resolved for a checkpoint (target or drafter)."""

    architecture: str
    model_class: str = Field(alias="class")
    model_type: str | None = None
    num_hidden_layers: int | None = None
    hidden_size: int | None = None
    vocab_size: int | None = None
    dflash: dict[str, Any] | None = Field(
        default=None, description="parse_dflash_draft_config: block size, target layers."
    )


class DryStart(ReproModel):
    """The engine dry-start of one recipe on the SGLang of its image's era."""

    sglang_version: str = Field(description="The SGLang whose start-up code ran.")
    engine: str = Field(description="Which start-up code ran, and on what stand-ins.")
    stand_ins: list[str] = Field(
        default_factory=list,
        description="What the dry start put in place of the real thing (model twins, a "
        "patch's algorithm on the release it builds on), one line each.",
    )
    refused: Refusal | None = None
    changed: dict[str, ResolvedValue] = Field(default_factory=dict)
    model: ModelClass | None = None
    drafter: ModelClass | None = None
    notes: list[str] = Field(default_factory=list, description="SGLang's warnings, in order.")

    @property
    def ok(self) -> bool:
        return self.refused is None
