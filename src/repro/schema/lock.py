"""The lock file and `Locked`: everything a recipe resolves to, so it re-runs exactly elsewhere.

`locks/<recipe>.lock.json`, JSON with sorted keys, two-space indent and a trailing newline, no
timestamps: re-locking an unchanged recipe gives a byte-identical file. Top-level keys:

- `lock_version`, `repro_version`
- `recipe`: the fully resolved recipe (`extends` merged), so a lock is itself a recipe input
- `image_spec`: the image spec the recipe names, resolved (remote diff sha256 filled in)
- `model`, `drafter`: `RepoPin`s (repo, revision asked for, commit sha, files, total_bytes)
- `drafter_block_size`: the drafter config.json's `block_size` at the pinned commit (absent
  when simulated, without a drafter, or when its config has none)
- `model_facts`, `drafter_facts`: what config.json says at the pinned commits that the drafter
  and the parallel sizes must fit (architecture, vocab_size, hidden_size, attention heads;
  absent when simulated or not readable)
- `drafter_architectures`: the drafter config.json's `architectures` (e.g. DFlash2DraftModel;
  absent like `drafter_block_size`), checked against the model classes the image's SGLang has
- `image`: the built/pulled image (`LockedImage`), written by the image stage through
  `update_lock_image`; null until then
- `catalog`: the SGLang option catalog (JSON form of `repro.schema.option_catalog.Catalog`): the
  image spec's effective catalog until the image stage puts the image's own
- `patches`: every patch of the image's patch set with its sha256

Keys other stages add are kept as they are.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from repro.schema.base import (
    COMMIT_PATTERN,
    DIGEST_PATTERN,
    HF_REPO_PATTERN,
    IMAGE_REFERENCE_PATTERN,
    PINNED_REFERENCE_PATTERN,
    REVISION_PATTERN,
    SHA256_PATTERN,
)
from repro.schema.deployment import DrafterFacts, ModelFacts
from repro.schema.drystart import DryStart
from repro.schema.image import ImageSpec
from repro.schema.option_catalog import Catalog
from repro.schema.recipe import Recipe

LOCK_VERSION = 1
LOCK_SUFFIX = ".lock.json"
# huggingface_hub's switch (read by SGLang's loaders as `constants.HF_HUB_OFFLINE`): no request
# leaves the server, so a file missing from the cache is an error, never a download.
HUB_OFFLINE_ENV = "HF_HUB_OFFLINE"


class FileEntry(BaseModel):
    """One file of a repository at a commit."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    path: str = Field(min_length=1, max_length=1000, description="Path inside the repository.")
    size: int = Field(ge=0, description="Size in bytes.")
    sha256: str | None = Field(
        default=None,
        pattern=SHA256_PATTERN,
        description="sha256 of the content for LFS files (the Hub gives it), else null.",
    )


class RepoPin(BaseModel):
    """A Hub repository pinned to a commit: what `repro lock` records for model and drafter."""

    model_config = ConfigDict(extra="forbid", strict=True)

    repo: str = Field(
        pattern=HF_REPO_PATTERN, description="Repository id, e.g. moonshotai/Kimi-K2.6."
    )
    revision: str = Field(
        pattern=REVISION_PATTERN,
        description="The revision the recipe asked for (branch, tag or SHA).",
    )
    sha: str | None = Field(
        pattern=COMMIT_PATTERN, description="The commit SHA it resolved to (null when simulated)."
    )
    files: list[FileEntry] = Field(default_factory=list, description="Selected files, by path.")
    total_bytes: int = Field(default=0, ge=0, description="Sum of the selected files' sizes.")
    simulated: bool = Field(
        default=False,
        description="A simulated deployment: the repo is a placeholder, nothing to fetch.",
    )

    @classmethod
    def make(cls, repo: str, revision: str, sha: str, files: list[FileEntry]) -> RepoPin:
        files = sorted(files, key=lambda f: f.path)
        return cls(
            repo=repo,
            revision=revision,
            sha=sha,
            files=files,
            total_bytes=sum(f.size for f in files),
        )

    @classmethod
    def placeholder(cls, repo: str, revision: str) -> RepoPin:
        return cls(repo=repo, revision=revision, sha=None, simulated=True)

    @property
    def label(self) -> str:
        return f"{self.repo}@{self.sha[:12] if self.sha else self.revision}"


class PatchPin(BaseModel):
    """One patch of the image's patch set, pinned by content."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = Field(description="Patch file name (local) or the diff's name (remote).")
    source: Literal["local", "remote"]
    path: str | None = Field(default=None, description="patches/<set>/<file> for local patches.")
    url: str | None = Field(default=None, description="URL of a remote diff.")
    sha256: str = Field(pattern=SHA256_PATTERN, description="sha256 of the patch bytes.")


# Label -> manifest key of the versions a lock and its drift show (sglang-kernel is the
# distribution of the `sgl_kernel` package since SGLang 0.5.17).
IMAGE_COMPONENTS = {
    "sglang": "sglang_version",
    "sglang-kernel": "sgl_kernel",
    "flashinfer": "flashinfer",
    "torch": "torch",
    "cuda": "cuda",
}


class LockedImage(BaseModel):
    """The lock's `image` section: the contract between the machine that built the image and
    the clusters that pull it.

    Written with the keys it was given only (a built image has no `pinned` key until it is
    pushed), so a lock file round-trips byte for byte.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    reference: str = Field(
        pattern=IMAGE_REFERENCE_PATTERN,
        max_length=512,
        description="The local tag the build gave (repro/<spec>:<version>).",
    )
    fingerprint: str = Field(
        pattern=DIGEST_PATTERN, description="Content fingerprint: what `verify` compares."
    )
    image_id: str | None = Field(
        default=None, pattern=DIGEST_PATTERN, description="The engine's image ID."
    )
    digest: str | None = Field(
        default=None, pattern=DIGEST_PATTERN, description="Registry manifest digest once pushed."
    )
    pinned: str | None = Field(
        default=None,
        pattern=PINNED_REFERENCE_PATTERN,
        max_length=512,
        description="`repository@sha256:...` once pushed: what other clusters pull.",
    )
    manifest: dict[str, Any] | None = Field(
        default=None, description="The image's build manifest, without its option catalog."
    )

    @model_serializer(mode="wrap")
    def _recorded_keys_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {key: value for key, value in data.items() if key in self.model_fields_set}

    @property
    def run_reference(self) -> str:
        """What to run: the pinned digest when pushed, else the local tag."""
        return self.pinned or self.reference

    @property
    def components(self) -> dict[str, str | None]:
        """The versions of what runs the model, from the manifest (write-manifest.py):
        a kernel change between two images shows here even when SGLang's version does not."""
        manifest = self.manifest or {}
        return {name: manifest.get(key) for name, key in IMAGE_COMPONENTS.items()}

    def pushed(self, digest: str, pinned: str) -> LockedImage:
        """This image as recorded after a push to a registry."""
        return self.model_copy(update={"digest": digest, "pinned": pinned})


class Lock(BaseModel):
    """A lock file's content; unknown top-level keys (other stages') are kept."""

    model_config = ConfigDict(extra="allow", strict=True)

    lock_version: int = LOCK_VERSION
    repro_version: str
    recipe: dict[str, Any]
    image_spec: ImageSpec | None = None
    model: RepoPin
    drafter: RepoPin | None = None
    drafter_block_size: int | None = Field(
        default=None,
        ge=1,
        description="The drafter's block size from its config.json (draft tokens per step).",
    )
    model_facts: ModelFacts | None = Field(
        default=None, description="The model's config.json facts at the pinned commit."
    )
    drafter_facts: DrafterFacts | None = Field(
        default=None, description="The drafter's config.json facts at the pinned commit."
    )
    drafter_architectures: list[str] | None = Field(
        default=None,
        description="The drafter's config.json `architectures` (the model class SGLang loads).",
    )
    image: LockedImage | None = None
    catalog: Catalog | None = None
    patches: list[PatchPin] = Field(default_factory=list)
    resolved: DryStart | None = Field(
        default=None,
        description="What SGLang's own start-up resolved the argv to (the engine dry-start).",
    )

    @field_validator("lock_version")
    @classmethod
    def _known_version(cls, value: int) -> int:
        if value != LOCK_VERSION:
            raise ValueError(
                f"this repro reads lock version {LOCK_VERSION}, the file is version {value}"
            )
        return value

    @model_serializer(mode="wrap")
    def _block_size_when_known(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Locks without a drafter block size or config facts keep their bytes (no `null`
        key added)."""
        data: dict[str, Any] = handler(self)
        optional = ("drafter_block_size", "model_facts", "drafter_facts", "drafter_architectures")
        for key in (*optional, "resolved"):
            if data.get(key) is None:
                data.pop(key, None)
        return data

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


@dataclass(frozen=True)
class Locked:
    """A recipe with its lock, resolved once from what the user named (a recipe name, a recipe
    file or a lock file) and handed to every stage.

    `lock` is None for a recipe that is not locked (or whose lock was not asked for);
    `lock_path` is the file `lock` was read from. `image_spec` and `catalog` are the image spec
    and option catalog the recipe runs with (the lock's own when it has them), filled once by
    `repro.lock.load_locked`; None when the spec cannot be loaded, `image_error` then says why.
    """

    recipe: Recipe
    lock: Lock | None = None
    lock_path: Path | None = None
    image_spec: ImageSpec | None = None
    catalog: Catalog | None = None
    image_error: Exception | None = field(default=None, compare=False)

    def need_image_spec(self) -> ImageSpec:
        """`image_spec`, or the error that kept it from loading (for stages that need it)."""
        if self.image_spec is None:
            raise self.image_error or ValueError(f"{self.name}: no image spec resolved")
        return self.image_spec

    def need_catalog(self) -> Catalog:
        """`catalog`, or the error that kept it from loading (for stages that render argv)."""
        if self.catalog is None:
            raise self.image_error or ValueError(f"{self.name}: no catalog resolved")
        return self.catalog

    @property
    def name(self) -> str:
        return self.recipe.name

    @property
    def image(self) -> LockedImage | None:
        """The image the lock records (None before `repro image build`)."""
        return self.lock.image if self.lock is not None else None

    @property
    def served(self) -> Recipe:
        """The recipe as the server runs it: what every stage renders, launches and exports.

        With a lock that pins real commits, `--revision` and `--speculative-draft-model-revision`
        name the locked SHAs (a branch such as `main` moves, and SGLang resolves a branch only
        through the cache's `refs/`, which `repro fetch` does not write), and the Hub is offline
        (`HF_HUB_OFFLINE=1`): SGLang then finds `snapshots/<sha>` in the mounted cache
        (sglang/srt/utils/common.py `find_local_repo_dir`) and never downloads. A recipe without
        a lock, or a simulated one, is served as written.
        """
        lock, recipe = self.lock, self.recipe
        if lock is None or lock.model.sha is None or lock.model.simulated:
            return recipe
        update: dict[str, Any] = {
            "model": recipe.model.model_copy(update={"revision": lock.model.sha}),
            "env": {**recipe.env, HUB_OFFLINE_ENV: "1"},
        }
        if recipe.drafter is not None and lock.drafter is not None and lock.drafter.sha:
            update["drafter"] = recipe.drafter.model_copy(update={"revision": lock.drafter.sha})
        return recipe.model_copy(update=update)
