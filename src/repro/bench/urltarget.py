"""What `repro bench --url URL` measures when the user has a server but no recipe: the
default bench plan (CLI options override it as for a recipe), named after the server."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from repro.schema.recipe import Bench


@dataclass
class UrlTarget:
    """Stands where `run_bench` takes a recipe: a name, a bench plan, nothing to launch,
    no lock, no simulator declared (the server itself says whether it is one)."""

    name: str  # the server's host:port, or "url"
    url: str
    bench: Bench = field(default_factory=lambda: Bench.model_validate({}))
    simulator: None = None
    cost: None = None
    source_path: Path | None = None

    def model_dump(self, mode: str = "json") -> dict[str, Any]:
        """The run's recipe.json: the plan and the server, nothing a recipe would pin."""
        return {"name": self.name, "url": self.url, "bench": self.bench.model_dump(mode=mode)}


def url_target(url: str) -> UrlTarget:
    """`http://10.0.0.5:30000/` -> a target named `10.0.0.5:30000`."""
    return UrlTarget(name=urlsplit(url).netloc or "url", url=url.rstrip("/"))
