"""Image specs: what an SGLang image is made of (`images/<name>.yaml`).

An image spec pins the base image by tag AND digest, optionally an SGLang commit to move the
base's checkout to, the CUDA version, the GPU architectures the image must carry, a patch set
(local files under `patches/<set>/`, applied in order, and remote diffs such as a pull
request's diff at a fixed head commit, with a sha256 that the first `repro lock` records) and
extra pip packages pinned with `==`.

A patch set declares what it adds to SGLang (`provides`: speculative algorithms, server
options, environment knobs, and the constraints its algorithms put on other options), so that
recipes using them validate before any image exists.

Which SGLang an image holds, and which catalog checks recipes before it exists:
- `base.sglang_commit` / `base.sglang_version` state the SGLang the base image holds (a
  nightly is `0.0.0.devN+g<sha>`, a commit no release names);
- `sglang_version` is the (public) version of the image's SGLang; its shipped catalog checks
  recipes before `repro lock`, unless
- `stand_in_catalog` makes a shipped release catalog stand in for the image's own (repro ships
  catalogs of releases only): the newest release built on or before `base.sglang_commit_date`
  (the version it names must be that one), adjusted by what the image's era has that no
  release holds (`adds`) or lacks (`lacks`), declared as a patch set declares what it adds.
Once an image is built, the catalog extracted from it (kept in the lock) is the truth.

Loading lives in `repro.recipe.images`; building, pushing and verifying in `repro.image`.
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PrivateAttr, field_validator, model_validator

from repro.errors import short_repr
from repro.schema.base import (
    ALGORITHM_PATTERN,
    COMMIT_PATTERN,
    DATE_PATTERN,
    DIGEST_PATTERN,
    ENV_NAME_PATTERN,
    HTTPS_URL_PATTERN,
    NAME_PATTERN,
    OPTION_PATTERN,
    PATCH_FILE_PATTERN,
    PIN_PATTERN,
    REPOSITORY_PATTERN,
    SHA256_PATTERN,
    TAG_PATTERN,
    VERSION_PATTERN,
    Description,
    StrictModel,
)
from repro.schema.option_catalog import CatalogOption

# What `sglang.__version__` reports, local part included (0.0.0.dev1+gd91c3682b).
REPORTED_VERSION_PATTERN = r"^\d+\.\d+(\.\d+)?([.+-][A-Za-z0-9.]+){0,3}$"


class BaseImage(StrictModel):
    """The image the SGLang image is built on."""

    image: str = Field(pattern=REPOSITORY_PATTERN, description="Repository, e.g. lmsysorg/sglang.")
    tag: str | None = Field(None, pattern=TAG_PATTERN, description="Tag (required unless local).")
    digest: str | None = Field(
        None, pattern=DIGEST_PATTERN, description="Manifest digest (required unless local)."
    )
    digest_unverified: bool = Field(
        False,
        description="True while the digest was not read from the registry by repro; "
        "`repro image bump SPEC --tag TAG` re-pins it.",
    )
    local: bool = Field(
        False,
        description="Built on this machine by repro (no registry): pinned by its content "
        "fingerprint in the lock instead of a digest.",
    )
    sglang_commit: str | None = Field(
        None,
        pattern=COMMIT_PATTERN,
        description="The SGLang commit the base image holds (a nightly tag names its first 8 "
        "hex digits); stated so that a stand-in catalog says what it stands in for.",
    )
    sglang_version: str | None = Field(
        None,
        pattern=REPORTED_VERSION_PATTERN,
        description="What the base's `sglang.__version__` reports, e.g. 0.0.0.dev1+gd91c3682b "
        "for a nightly.",
    )
    sglang_commit_date: str | None = Field(
        None,
        pattern=DATE_PATTERN,
        description="The day of the SGLang commit a nightly holds (its tag says it, e.g. "
        "nightly-dev-cu13-20260817-...): picks the release catalog that stands in for it.",
    )

    @field_validator("sglang_commit_date", mode="before")
    @classmethod
    def _date_text(cls, value: Any) -> Any:
        return value.isoformat() if isinstance(value, date) else value

    @model_validator(mode="after")
    def _pinned(self) -> BaseImage:
        if self.local:
            if self.digest is not None:
                raise ValueError(
                    "@digest: a local base is pinned by content fingerprint; drop digest"
                )
        elif self.tag is None:
            raise ValueError("@tag: a registry base needs a tag (and a digest)")
        elif self.digest is None:
            raise ValueError("@digest: a registry base is pinned by digest (sha256:...)")
        return self

    @property
    def reference(self) -> str:
        ref = self.image + (f":{self.tag}" if self.tag else "")
        return ref + (f"@{self.digest}" if self.digest else "")


class RemoteDiff(StrictModel):
    """A diff fetched by repro on the host before the build (e.g. a pull request's diff)."""

    name: str = Field(pattern=NAME_PATTERN, description="File name for the fetched diff.")
    url: str = Field(
        pattern=HTTPS_URL_PATTERN, max_length=2008, description="HTTPS URL of the diff."
    )
    sha256: str | None = Field(
        None,
        pattern=SHA256_PATTERN,
        description="sha256 of the diff; recorded by the first `repro lock`, then enforced.",
    )
    pull_request: int | None = Field(None, ge=1, description="Pull request number, if any.")
    head_commit: str | None = Field(
        None, pattern=COMMIT_PATTERN, description="The PR head commit the URL is pinned to."
    )
    description: str = Field("", max_length=2000, description="What the diff does.")

    @model_validator(mode="after")
    def _pinned_url(self) -> RemoteDiff:
        if self.head_commit and self.head_commit not in self.url:
            raise ValueError("@url: must name head_commit, so that the diff cannot move")
        return self


class ProvidedOption(StrictModel):
    """A server option a patch set adds (as its argparse declaration would)."""

    name: str = Field(
        pattern=OPTION_PATTERN, description="Option, e.g. --speculative-ddtree-budget."
    )
    aliases: list[str] = Field(default_factory=list, description="Other spellings.")
    type: Literal["int", "float", "str", "flag"] = Field(description="Value type; flag = no value.")
    choices: list[str] | None = Field(None, description="Allowed values, if restricted.")
    default: int | float | str | bool | None = Field(None, description="Default value.")
    help: str = Field("", max_length=2000, description="What it does.")

    @field_validator("aliases")
    @classmethod
    def _aliases(cls, value: list[str]) -> list[str]:
        for alias in value:
            if not re.match(OPTION_PATTERN, alias):
                raise ValueError(f"{alias!r} is not an option such as --foo-bar")
        return value

    @field_validator("choices")
    @classmethod
    def _choices(cls, value: list[str] | None) -> list[str] | None:
        for choice in value or []:
            if not choice.isprintable() or len(choice) > 200:
                raise ValueError(f"choice {short_repr(choice)} is not one line of text")
        return value

    def to_catalog_option(self, provided_by: str) -> CatalogOption:
        return CatalogOption(
            options=(self.name, *self.aliases),
            dest=self.name.lstrip("-").replace("-", "_"),
            kind="storetrue" if self.type == "flag" else "store",
            type=None if self.type == "flag" else self.type,
            nargs=0 if self.type == "flag" else None,
            choices=tuple(self.choices) if self.choices is not None else None,
            default=self.default,
            provided_by=provided_by,
            help=self.help or None,
        )


class OptionConstraint(StrictModel):
    """What a patched algorithm's server-args validation does to another option.

    `requires`: SGLang raises unless the option is `value` (unset is accepted unless
    `explicit`); `refuses`: SGLang raises when the option is set; `forces`: SGLang overrides
    the option to `value` (a recipe setting another value is overridden); `minimum`: SGLang
    raises for a value below `value`. `when: full_tree` limits it to DDTREE's full-tree mode
    (a budget above the drafter's block size - 1). `repro recipe check` reads these
    (rules_speculative).
    """

    algorithm: str = Field(pattern=ALGORITHM_PATTERN, description="The algorithm, e.g. DDTREE.")
    option: str = Field(pattern=OPTION_PATTERN, description="The option, e.g. --page-size.")
    effect: Literal["requires", "refuses", "forces", "minimum"] = Field(
        description="What SGLang does."
    )
    value: int | float | str | bool | None = Field(
        None, description="The required, forced or smallest value (true for a flag)."
    )
    when: Literal["full_tree"] | None = Field(
        None,
        description="full_tree: only when the DDTREE budget exceeds the drafter's block "
        "size - 1 (a tree, not a chain).",
    )
    fallback: str | None = Field(
        None,
        pattern=OPTION_PATTERN,
        description="The option that sets this one when it is unset (e.g. --attention-backend "
        "for --prefill-attention-backend).",
    )
    replaces: str | None = Field(
        None,
        max_length=200,
        description="forces only this value of the option (e.g. tc_piecewise); others stay.",
    )
    explicit: bool = Field(
        False,
        description="The check reads the raw value before SGLang applies its default (e.g. "
        "page_size is None until then): the recipe must set it.",
    )
    source: str = Field(
        max_length=500,
        description="Where the constraint is written, e.g. sgl-project/sglang#29907 "
        "(speculative_hook.py); named in check's messages.",
    )

    @model_validator(mode="after")
    def _value_given(self) -> OptionConstraint:
        if (self.effect == "refuses") != (self.value is None):
            raise ValueError("@value: requires, forces and minimum name a value; refuses none")
        if self.replaces is not None and self.effect != "forces":
            raise ValueError("@replaces: only a forced value replaces another")
        if self.explicit and self.effect != "requires":
            raise ValueError("@explicit: only a required value must be set explicitly")
        return self


class Provides(StrictModel):
    """What a patch set adds to SGLang."""

    speculative_algorithms: list[str] = Field(
        default_factory=list, description="Speculative algorithms it registers, e.g. DDTREE."
    )
    options: list[ProvidedOption] = Field(default_factory=list, description="Server options.")
    env: list[str] = Field(default_factory=list, description="Environment knobs it reads.")
    constraints: list[OptionConstraint] = Field(
        default_factory=list,
        description="What its algorithms' validation requires, refuses or forces of other "
        "options; `repro recipe check` enforces them.",
    )
    rejects_requests: list[Literal["grammar", "logprobs"]] = Field(
        default_factory=list,
        description="Request features its algorithms reject at run time (a request with a "
        "grammar constraint or asking for logprobs fails).",
    )

    @field_validator("speculative_algorithms")
    @classmethod
    def _algorithms(cls, value: list[str]) -> list[str]:
        for name in value:
            if not re.match(ALGORITHM_PATTERN, name):
                raise ValueError(f"{name!r} is not an upper-case algorithm name")
        return value

    @field_validator("env")
    @classmethod
    def _env(cls, value: list[str]) -> list[str]:
        for name in value:
            if not re.match(ENV_NAME_PATTERN, name):
                raise ValueError(f"{name!r} is not an environment variable name")
        return value


class PatchSet(StrictModel):
    """Patches applied on top of the base image's SGLang, in a thin top layer."""

    name: str = Field(pattern=NAME_PATTERN, description="Directory patches/<name>/.")
    local: list[str] = Field(
        default_factory=list,
        description="Patch files in patches/<name>/, applied in this order after the remote "
        "diffs (so a local patch can fix up a pull request).",
    )
    remote: list[RemoteDiff] = Field(
        default_factory=list, description="Remote diffs, applied first, in this order."
    )
    provides: Provides = Field(default_factory=Provides, description="What the patches add.")

    @field_validator("local")
    @classmethod
    def _files(cls, value: list[str]) -> list[str]:
        for name in value:
            if not re.match(PATCH_FILE_PATTERN, name):
                raise ValueError(f"{name!r} is not a file name in patches/<set>/")
        return value


class StandInCatalog(StrictModel):
    """A shipped release catalog standing in for the image's own until `repro lock` extracts
    it: the newest release built on or before the base's SGLang commit date."""

    version: str | None = Field(
        None,
        pattern=VERSION_PATTERN,
        description="The release whose shipped catalog stands in (repro/catalogs/"
        "sglang-<version>.json); when given, it must be the one base.sglang_commit_date picks.",
    )
    adds: list[ProvidedOption] = Field(
        default_factory=list,
        description="Options of the image's era that no release holds, so that recipes using "
        "them validate before the image exists.",
    )
    lacks: list[str] = Field(
        default_factory=list,
        description="Options of the stand-in that the image's era does not have yet; removed "
        "from the catalog recipes are checked against.",
    )

    @field_validator("lacks")
    @classmethod
    def _options(cls, value: list[str]) -> list[str]:
        for name in value:
            if not re.match(OPTION_PATTERN, name):
                raise ValueError(f"{name!r} is not an option such as --foo-bar")
        return value


def _text(value: Any) -> Any:
    """YAML reads 13.0 and 12.0 as numbers; versions and architectures are text."""
    if isinstance(value, float):
        return f"{value:.1f}" if value == int(value) else repr(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value}.0"
    return value


class ImageSpec(StrictModel):
    """One SGLang image: pinned base, SGLang version/commit, CUDA, architectures, patches."""

    name: str = Field(pattern=NAME_PATTERN, description="Spec name; defaults to the file name.")
    description: Description = Field("", max_length=10_000, description="What the image is for.")
    base: BaseImage = Field(description="Base image, pinned by tag and digest.")
    sglang_version: str = Field(
        pattern=VERSION_PATTERN,
        description="SGLang version of the image (public part: a nightly is 0.0.0.devN); "
        "selects the shipped option catalog (repro/catalogs/sglang-<version>.json) unless "
        "stand_in_catalog names another.",
    )
    stand_in_catalog: StandInCatalog | None = Field(
        None,
        description="The shipped catalog that checks recipes before `repro lock`, when none is "
        "the image's own (a nightly between releases).",
    )
    sglang_commit: str | None = Field(
        None, pattern=COMMIT_PATTERN, description="SGLang commit to move the base checkout to."
    )
    cuda_version: str | None = Field(
        None, pattern=r"^\d{1,2}\.\d{1,2}$", description="CUDA version, e.g. 13.0."
    )
    gpu_architectures: list[Literal["9.0", "10.0", "10.3", "12.0"]] = Field(
        default_factory=list,
        description="Compute capabilities the image must carry kernels for.",
    )
    patch_set: PatchSet | None = Field(None, description="Patches and what they provide.")
    pip: list[str] = Field(
        default_factory=list, description="Extra pip packages, each pinned with ==."
    )
    simulated: bool = Field(
        False, description="The CPU simulator stands in for SGLang (no GPU, no CUDA)."
    )
    device: Literal["cuda", "cpu"] = Field(
        "cuda",
        description='"cpu": SGLang\'s own engine on the CPU (no GPU, no CUDA; its recipes run '
        "with gpu_runtime: none and --device cpu), for trying repro on a real engine anywhere.",
    )

    _source_path: Path | None = PrivateAttr(default=None)

    @field_validator("cuda_version", mode="before")
    @classmethod
    def _cuda_text(cls, value: Any) -> Any:
        return _text(value)

    @field_validator("gpu_architectures", mode="before")
    @classmethod
    def _arch_text(cls, value: Any) -> Any:
        return [_text(v) for v in value] if isinstance(value, list) else value

    @field_validator("pip")
    @classmethod
    def _pins(cls, value: list[str]) -> list[str]:
        for req in value:
            if not re.match(PIN_PATTERN, req):
                raise ValueError(f"{req!r} is not pinned as package==version")
        return value

    @model_validator(mode="after")
    def _gpu_image(self) -> ImageSpec:
        if self.device == "cpu":
            if self.simulated:
                raise ValueError("@device: a simulated image has no device; drop device: cpu")
            if self.gpu_architectures or self.cuda_version is not None:
                raise ValueError(
                    "@device: a CPU image carries no GPU kernels: drop gpu_architectures and "
                    "cuda_version"
                )
        elif not self.simulated:
            if not self.gpu_architectures:
                raise ValueError("@gpu_architectures: a GPU image lists at least one architecture")
            if self.cuda_version is None:
                raise ValueError("@cuda_version: a GPU image names its CUDA version")
        return self

    @model_validator(mode="after")
    def _dated_stand_in(self) -> ImageSpec:
        if self.stand_in_catalog is not None and self.base.sglang_commit_date is None:
            raise ValueError(
                "@base.sglang_commit_date: a stand-in catalog is chosen by the day of the "
                "base's SGLang commit; state it (YYYY-MM-DD)"
            )
        return self

    @model_validator(mode="after")
    def _same_sglang_as_base(self) -> ImageSpec:
        reported = self.base.sglang_version
        public = reported.split("+")[0] if reported else None
        if public and self.sglang_commit is None and public != self.sglang_version:
            raise ValueError(
                f"@sglang_version: the base's SGLang reports {reported} and sglang_commit keeps "
                f"its checkout, so the image's version is {public}"
            )
        return self

    @property
    def source_path(self) -> Path | None:
        return self._source_path

    @property
    def provides(self) -> Provides:
        return self.patch_set.provides if self.patch_set else Provides()

    def local_patch_paths(self, patches_dir: Path) -> list[Path]:
        """The local patch files, in application order."""
        if self.patch_set is None:
            return []
        return [patches_dir / self.patch_set.name / f for f in self.patch_set.local]
