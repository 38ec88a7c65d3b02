"""`recipe.json` as reports read it: the resolved recipe a run recorded.

Lenient (the MachineInfo pattern): every key is kept, the fields reports read are typed, and
each may be missing, because a `--url` run records only its name, URL and bench plan and older
records may lack newer fields. The strict model of a recipe is repro.schema.recipe.Recipe.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="allow")


class RecordedRepo(_Lenient):
    """The served model or the drafter: a Hub repository at a revision."""

    repo: str | None = None
    revision: str | None = None

    @property
    def pinned(self) -> str:
        return f"{self.repo or '?'}@{self.revision or '?'}"


class RecordedSpeculative(_Lenient):
    algorithm: str | None = None


class RecordedTopology(_Lenient):
    gpus: int | None = Field(default=None, description="GPUs the server runs on")


class RecordedRecipe(_Lenient):
    """The resolved recipe (or a `--url` run's target) as recipe.json holds it."""

    name: str | None = None
    url: str | None = Field(default=None, description="a `--url` run's server")
    model: RecordedRepo | None = None
    drafter: RecordedRepo | None = None
    speculative: RecordedSpeculative | None = None
    parallelism: dict[str, Any] = Field(default_factory=dict, description="tp, ep, dp, pp, ...")
    topology: RecordedTopology | None = None

    @property
    def gpus(self) -> int:
        """GPUs the recipe declares; 0 when it declares none (a `--url` run)."""
        return (self.topology.gpus if self.topology else None) or 0

    @property
    def model_ref(self) -> str:
        """`repo@revision` of the served model (`?@?` for a `--url` run)."""
        return self.model.pinned if self.model else "?@?"

    @property
    def drafter_ref(self) -> str:
        return self.drafter.pinned if self.drafter else "none"

    @property
    def algorithm(self) -> str | None:
        return self.speculative.algorithm if self.speculative else None
