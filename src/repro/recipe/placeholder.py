"""Image specs pinned by a placeholder digest: the one owner of that fact and of what to do.

A spec written where repro could not reach the registry carries an all-zero base digest
(`digest_unverified: true`). Nothing can be pulled by it: `repro lock`, `repro image build`
and `repro run` (so `make recipe`) refuse it before Docker is asked for anything, and
`repro recipe check` warns (`--strict` fails). `repro image bump SPEC --tag TAG` reads the
tag's digest from the registry and re-pins the spec.
"""

from __future__ import annotations

from repro.errors import ReproError
from repro.recipe.findings import Finding, display_path
from repro.schema.image import ImageSpec
from repro.schema.lock import Locked

PLACEHOLDER_DIGEST = "sha256:" + "0" * 64
RULE = "placeholder-digest"


class PlaceholderDigest(ReproError):
    """An image spec's base is pinned by the placeholder digest."""


def is_placeholder(spec: ImageSpec) -> bool:
    """True when the spec's base digest stands for one repro never read from the registry."""
    return not spec.base.local and spec.base.digest == PLACEHOLDER_DIGEST


def _registry(image: str) -> str:
    """The registry a repository is pulled from (Docker's rule: a first part with a dot or a
    port, or localhost, names a host; otherwise Docker Hub)."""
    first, _, rest = image.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return first
    return "Docker Hub"


def _where(spec: ImageSpec) -> str:
    return display_path(spec.source_path) if spec.source_path else f"image spec {spec.name}"


def _bump(name: str, tag: str) -> str:
    """The command that pins spec `name` to the digest the registry gives for `tag`."""
    return f"repro image bump {name} --tag {tag}"


def _pin_advice(name: str, image: str, tag: str) -> str:
    return (
        f"pin it with `{_bump(name, tag)}` (it pulls that tag from "
        f"{_registry(image)}, so it needs the registry)"
    )


def placeholder_finding(spec: ImageSpec) -> Finding | None:
    """`recipe check`'s warning on the spec's digest field (an error would fail every check of
    the shipped recipes where no registry answers), or None when the digest is real."""
    if not is_placeholder(spec):
        return None
    image, tag = spec.base.image, spec.base.tag or "TAG"  # a registry base has a tag
    message = (
        f"a placeholder (all zeros), not the digest of {image}:{tag}: lock and image "
        f"build refuse it; {_pin_advice(spec.name, image, tag)}"
    )
    return Finding("warning", _where(spec), "base.digest", message, RULE)


def locked_placeholder(locked: Locked) -> Finding | None:
    """`placeholder_finding` of a recipe's image, unless its lock records an image already
    (then nothing pulls the base)."""
    if locked.image_spec is None or locked.image is not None:
        return None
    return placeholder_finding(locked.image_spec)


def pin_step(locked: Locked) -> str | None:
    """The command a run's plan starts with while the recipe's image is a placeholder."""
    spec = locked.image_spec
    if locked_placeholder(locked) is None or spec is None:
        return None
    bump = _bump(spec.name, spec.base.tag or "TAG")
    return f"{bump}   # the base digest is a placeholder: this reads it from the registry"


def _refusal(where: str, name: str, image: str, tag: str, doing: str) -> PlaceholderDigest:
    return PlaceholderDigest(
        f"refusing to {doing}: {where}: base.digest is a placeholder (all zeros), not the "
        f"digest of {image}:{tag}; nothing can be pulled by it",
        hint=_pin_advice(name, image, tag) + ", then run this again",
    )


def refuse_placeholder(spec: ImageSpec, doing: str) -> None:
    """Raise `PlaceholderDigest` when the spec's base is a placeholder; `doing` says what is
    refused (e.g. "lock kimi26-ep4")."""
    if is_placeholder(spec):
        tag = spec.base.tag or "TAG"  # a registry base has a tag
        raise _refusal(_where(spec), spec.name, spec.base.image, tag, doing)


def refuse_placeholder_base(name: str, base_ref: str, doing: str) -> None:
    """`refuse_placeholder` for a build's FROM reference (`image:tag@digest`) of spec `name`,
    where the spec itself is no longer at hand."""
    pinned, _, digest = base_ref.rpartition("@")
    if digest != PLACEHOLDER_DIGEST:
        return
    image, _, tag = pinned.rpartition(":")
    if "/" in tag or not image:  # no tag: image:port/repo
        image, tag = pinned, "TAG"
    raise _refusal(f"image spec {name}", name, image, tag, doing)
