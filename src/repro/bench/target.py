"""What a bench or accept run measures: a recipe with its lock, or a bare server URL.

The caller that resolved what the user named builds it (the CLI and `repro run` hold the
`Locked`), so bench never looks a lock up itself: it only talks HTTP. A `--url` run has no
recipe: the default bench plan (CLI options override it as for a recipe), named after the
server, and its recipe.json keeps only the name, the URL and the plan, as it always has.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from repro.errors import ReproError
from repro.schema.lock import Lock, Locked
from repro.schema.recipe import Bench, Recipe
from repro.schema.recordedrecipe import RecordedRecipe


@dataclass(frozen=True)
class BenchTarget:
    """One server to measure. `recipe` None: a bare URL (nothing to check it against, no lock,
    no simulator declared: the server itself says whether it is one). `url` None: the server
    answers where the recipe's deployment does (`server_url`). `ref` is what the user named
    (a recipe name or file, or the URL), as an accept record names its baseline."""

    name: str
    bench: Bench = field(default_factory=lambda: Bench.model_validate({}))
    recipe: Recipe | None = None
    lock: Lock | None = None
    url: str | None = None
    ref: str | None = None

    @classmethod
    def from_locked(cls, locked: Locked, ref: str | None = None) -> BenchTarget:
        return cls.from_recipe(locked.recipe, locked.lock, ref)

    @classmethod
    def from_recipe(
        cls, recipe: Recipe, lock: Lock | None = None, ref: str | None = None
    ) -> BenchTarget:
        ref = ref or recipe.name
        return cls(name=recipe.name, bench=recipe.bench, recipe=recipe, lock=lock, ref=ref)

    @classmethod
    def from_url(cls, url: str) -> BenchTarget:
        """`http://10.0.0.5:30000/` -> a target named `10.0.0.5:30000`."""
        return cls(name=urlsplit(url).netloc or "url", url=url.rstrip("/"), ref=url)

    @property
    def declares_simulator(self) -> bool:
        return self.recipe is not None and self.recipe.simulator is not None

    @property
    def gpu_hour_usd(self) -> float | None:
        """The recipe's `cost.gpu_hour_usd` (None: no recipe or no cost)."""
        cost = self.recipe.cost if self.recipe is not None else None
        return cost.gpu_hour_usd if cost is not None else None

    @property
    def gpus(self) -> int:
        """GPUs the recipe declares; 0 for a bare URL."""
        return self.recipe.topology.gpus if self.recipe is not None else 0

    def need_recipe(self, what: str) -> Recipe:
        """The recipe, for a measurement that only exists against one (`what` says which)."""
        if self.recipe is None:
            raise ReproError(
                f"{what} needs a recipe, not the bare server {self.name}",
                hint="give the recipe the server runs (RECIPE --url URL)",
            )
        return self.recipe

    def server_url(self, deployment_port: int | None = None) -> str:
        """Where the server answers: the URL given, else `deployment_port` (the host port of
        the deployment repro launched for the recipe, `repro.run.provenance.target_url`), else
        the recipe's server.port."""
        if self.url is not None:
            return self.url
        recipe = self.need_recipe("a server without --url")
        return f"http://127.0.0.1:{deployment_port or recipe.server.port}"

    def recorded(self, bench: Bench) -> RecordedRecipe:
        """The run's recipe.json with `bench` (the plan after CLI overrides): the resolved
        recipe, or for a bare URL the plan and the server, nothing a recipe would pin."""
        if self.recipe is None:
            return RecordedRecipe.of_url(self.name, self.url, bench)
        return RecordedRecipe.of(self.recipe, bench)
