"""Image specs pinned by a placeholder digest: the one owner of that fact and of what to do.

A spec written where repro could not reach the registry carries an all-zero base digest
(`digest_unverified: true`). Nothing can be pulled by it: `repro lock`, `repro image build`
and `repro run` (so `make recipe`) refuse it before Docker is asked for anything, and
`repro recipe check` warns (`--strict` fails). `repro image bump SPEC --tag TAG` reads the
tag's digest from the registry and re-pins the spec.
"""

from __future__ import annotations

from repro.errors import ReproError
from repro.recipe.findings import Finding, Severity, display_path
from repro.schema.image import ImageSpec

PLACEHOLDER_DIGEST = "sha256:" + "0" * 64
RULE = "placeholder-digest"


class PlaceholderDigest(ReproError):
    """An image spec's base is pinned by the placeholder digest."""


def is_placeholder(spec: ImageSpec) -> bool:
    """True when the spec's base digest stands for one repro never read from the registry."""
    return not spec.base.local and spec.base.digest == PLACEHOLDER_DIGEST


def pin_command(spec: ImageSpec) -> str:
    """The command that pins the spec's own tag to the digest the registry gives."""
    return f"repro image bump {spec.name} --tag {spec.base.tag}"


def _registry(image: str) -> str:
    """The registry a repository is pulled from (Docker's rule: a first part with a dot or a
    port, or localhost, names a host; otherwise Docker Hub)."""
    first, _, rest = image.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return first
    return "Docker Hub"


def _where(spec: ImageSpec) -> str:
    return display_path(spec.source_path) if spec.source_path else f"image spec {spec.name}"


def _pin_advice(spec: ImageSpec) -> str:
    return (
        f"pin it with `{pin_command(spec)}` (it pulls that tag from "
        f"{_registry(spec.base.image)}, so it needs the registry)"
    )


def placeholder_finding(spec: ImageSpec, severity: Severity = "warning") -> Finding | None:
    """`recipe check`'s line on the spec's digest field, or None when the digest is real."""
    if not is_placeholder(spec):
        return None
    message = (
        f"a placeholder (all zeros), not the digest of {spec.base.image}:{spec.base.tag}: "
        f"lock and image build refuse it; {_pin_advice(spec)}"
    )
    return Finding(severity, _where(spec), "base.digest", message, RULE)


def refuse_placeholder(spec: ImageSpec, doing: str) -> None:
    """Raise `PlaceholderDigest` when the spec's base is a placeholder; `doing` says what is
    refused (e.g. "lock kimi26-ep4")."""
    if not is_placeholder(spec):
        return
    raise PlaceholderDigest(
        f"refusing to {doing}: {_where(spec)}: base.digest is a placeholder (all zeros), "
        f"not the digest of {spec.base.image}:{spec.base.tag}; nothing can be pulled by it",
        hint=_pin_advice(spec) + ", then run this again",
    )
