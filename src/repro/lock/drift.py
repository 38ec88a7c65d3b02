"""What changed between a lock on disk and what the recipe resolves to now."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from repro.recipe.rulebase import Context
from repro.schema.image import ImageSpec
from repro.schema.lock import Lock, LockedImage, RepoPin
from repro.schema.option_catalog import Catalog
from repro.schema.recipe import Recipe
from repro.units import human_bytes


def changed_paths(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted paths where two JSON values differ (mappings are compared key by key)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for key in sorted(set(old) | set(new), key=str):
            out += changed_paths(old.get(key), new.get(key), f"{prefix}.{key}" if prefix else key)
        return out
    return [] if old == new else [prefix or "(all)"]


def _paths_line(what: str, old: Any, new: Any) -> list[str]:
    paths = changed_paths(old, new)
    if not paths:
        return []
    more = f" (+{len(paths) - 6} more)" if len(paths) > 6 else ""
    return [f"{what} changed since the lock: {', '.join(paths[:6])}{more}"]


def diff_pins(role: str, old: RepoPin | None, new: RepoPin | None) -> list[str]:
    # Deferred: the hub stage loads huggingface_hub, which every command resolving a recipe
    # through the lock stage would otherwise pay for.

    if old is None and new is None:
        return []
    if old is None or new is None:
        now = f"{new.repo}@{new.revision}" if new else "none"
        locked = f"{old.repo}@{old.revision}" if old else "none"
        return [f"{role}: the recipe now has {now}, the lock has {locked}"]
    if (old.repo, old.revision, old.simulated) != (new.repo, new.revision, new.simulated):
        return [
            f"{role}: the recipe now asks for {new.repo}@{new.revision}, "
            f"the lock has {old.repo}@{old.revision}"
        ]
    out: list[str] = []
    label = f"{role} {new.repo}"
    if old.sha != new.sha:
        was, now = (old.sha or "-")[:12], (new.sha or "-")[:12]
        out.append(f"{label}: '{new.revision}' moved from {was} to {now}")
    before = {f.path: f for f in old.files}
    after = {f.path: f for f in new.files}
    for path in sorted(set(after) - set(before)):
        out.append(f"{label}: file added: {path} ({human_bytes(after[path].size)})")
    for path in sorted(set(before) - set(after)):
        out.append(f"{label}: file removed: {path}")
    for path in sorted(set(before) & set(after)):
        a, b = before[path], after[path]
        if a.size != b.size:
            out.append(f"{label}: {path} changed size: {a.size} -> {b.size} bytes")
        elif a.sha256 != b.sha256:
            out.append(f"{label}: {path} changed content (sha256)")
    if old.total_bytes != new.total_bytes:
        out.append(
            f"{label}: total {human_bytes(old.total_bytes)} -> {human_bytes(new.total_bytes)}"
        )
    return out


def diff_locks(old: Lock, new: Lock) -> list[str]:
    """One line per difference that matters for reproducing the deployment."""
    out = _paths_line("recipe", old.recipe, new.recipe)
    out += _paths_line("image spec", _json(old.image_spec), _json(new.image_spec))
    out += diff_pins("model", old.model, new.model)
    out += diff_pins("drafter", old.drafter, new.drafter)
    if old.drafter_block_size != new.drafter_block_size:
        out.append(
            f"drafter block_size (config.json): {old.drafter_block_size} -> "
            f"{new.drafter_block_size}"
        )
    out += diff_components(old.image, new.image)
    before = {(p.source, p.name): p.sha256 for p in old.patches}
    after = {(p.source, p.name): p.sha256 for p in new.patches}
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            state = "added" if key not in before else "removed" if key not in after else "changed"
            out.append(f"patch {key[1]} ({key[0]}): {state}")
    return out


def diff_components(old: LockedImage | None, new: LockedImage | None) -> list[str]:
    """The image's SGLang, sglang-kernel, flashinfer, torch and CUDA versions that changed."""
    if old is None or new is None:
        return []
    before, after = old.components, new.components
    return [
        f"image {name}: {before[name] or '-'} -> {after[name] or '-'}"
        for name in after
        if before[name] != after[name]
    ]


def _json(spec: ImageSpec | None) -> dict[str, Any] | None:
    return spec.model_dump(mode="json") if spec is not None else None


def recipe_options(recipe: Recipe, *catalogs: Catalog) -> set[str]:
    """The option spellings the recipe's rendered argv sets, as each catalog reads them."""
    return {
        found.spelling
        for catalog in catalogs
        for found in Context(recipe, catalog=catalog).options.values()
    }


def catalog_drift(stand_in: Catalog, image: Catalog, used_options: Iterable[str]) -> list[str]:
    """Where the image's own catalog differs from the stand-in the recipe was checked against,
    for the options the recipe uses: one line per option added, removed, or with other choices
    or another default."""
    out: list[str] = []
    seen: set[tuple[str | None, str | None]] = set()
    for name in sorted(set(used_options)):
        before, after = stand_in.find(name), image.find(name)
        key = (before.name if before else None, after.name if after else None)
        if key in seen or (before is None and after is None):
            continue
        seen.add(key)
        if before is None:
            out.append(f"{name}: added (the stand-in catalog lacks it)")
        elif after is None:
            out.append(f"{name}: removed (the image's SGLang has no such option)")
        else:
            if _as_set(before.choices) != _as_set(after.choices):  # SGLang keeps some in sets
                out.append(f"{name}: choices {_listed(before.choices)} -> {_listed(after.choices)}")
            if before.default != after.default:
                out.append(f"{name}: default {before.default!r} -> {after.default!r}")
    return out


def _as_set(choices: tuple[str, ...] | None) -> frozenset[str] | None:
    return None if choices is None else frozenset(choices)


def _listed(choices: tuple[str, ...] | None) -> str:
    return "any" if choices is None else "{" + ", ".join(choices) + "}"
