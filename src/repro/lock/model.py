"""The lock file: everything a recipe resolves to, so the deployment re-runs exactly elsewhere.

`locks/<recipe>.lock.json`, JSON with sorted keys, two-space indent and a trailing newline, no
timestamps: re-locking an unchanged recipe gives a byte-identical file. Top-level keys:

- `lock_version`, `repro_version`
- `recipe`: the fully resolved recipe (`extends` merged), so a lock is itself a recipe input
- `image_spec`: the image spec the recipe names, resolved (remote diff sha256 filled in)
- `model`, `drafter`: `RepoPin`s (repo, revision asked for, commit sha, files, total_bytes)
- `image`: the built/pulled image (reference, digest, fingerprint, manifest), written by the
  image stage through `update_lock_image`; null until then
- `catalog`: the SGLang option catalog (JSON form of `repro.recipe.Catalog`): the image
  spec's effective catalog until the image stage puts the image's own
- `patches`: every patch of the image's patch set with its sha256

Keys other stages add are kept as they are.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from repro.hub.models import RepoPin

LOCK_VERSION = 1
LOCK_SUFFIX = ".lock.json"


class PatchPin(BaseModel):
    """One patch of the image's patch set, pinned by content."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Patch file name (local) or the diff's name (remote).")
    source: Literal["local", "remote"]
    path: str | None = Field(default=None, description="patches/<set>/<file> for local patches.")
    url: str | None = Field(default=None, description="URL of a remote diff.")
    sha256: str = Field(description="sha256 of the patch bytes.")


class Lock(BaseModel):
    """A lock file's content; unknown top-level keys (other stages') are kept."""

    model_config = ConfigDict(extra="allow")

    lock_version: int = LOCK_VERSION
    repro_version: str
    recipe: dict[str, Any]
    image_spec: dict[str, Any] | None = None
    model: RepoPin
    drafter: RepoPin | None = None
    image: dict[str, Any] | None = None
    catalog: dict[str, Any] | None = None
    patches: list[PatchPin] = Field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.recipe.get("name", "?"))

    def pins(self) -> list[RepoPin]:
        return [self.model, *([self.drafter] if self.drafter else [])]

    def to_json(self) -> str:
        """The canonical text: sorted keys, indent 2, trailing newline."""
        return dump_json(self.model_dump(mode="json"))


def dump_json(data: dict[str, Any]) -> str:
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
