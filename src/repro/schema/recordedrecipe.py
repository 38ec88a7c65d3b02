"""`recipe.json`: the resolved recipe a run recorded, as it is written and read back.

Lenient (the MachineInfo pattern): every key is kept, the fields reports read are typed, and
each may be missing, because a `--url` run records only its name, URL and bench plan and older
records may lack newer fields. The strict model of a recipe is repro.schema.recipe.Recipe;
`RecordedRecipe.of` records one.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from repro.schema.recipe import Bench, Recipe


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
    bench: dict[str, Any] | None = Field(
        default=None, description="a bench run's plan after CLI overrides (`Bench`)"
    )

    @classmethod
    def of(cls, recipe: Recipe, bench: Bench | None = None) -> RecordedRecipe:
        """What a run records of `recipe`, with `bench` (the plan after CLI overrides) when
        it benches."""
        data = recipe.model_dump(mode="json")
        if bench is not None:
            data["bench"] = bench.model_dump(mode="json")
        return cls.model_validate(data)

    @classmethod
    def of_url(cls, name: str, url: str | None, bench: Bench) -> RecordedRecipe:
        """A `--url` run's target: the server and the plan, nothing a recipe would pin."""
        plan = bench.model_dump(mode="json")
        return cls.model_validate({"name": name, "url": url, "bench": plan})

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
