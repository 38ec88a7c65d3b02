"""The drift between the stand-in catalog and the image's own, for the options a recipe uses
(what `repro image build` prints after it puts the image's catalog into the lock)."""

from __future__ import annotations

from typing import Any

from repro.lock import catalog_drift
from repro.spec.option_catalog import Catalog


def _flag(name: str, **extra: Any) -> dict[str, Any]:
    dest = name.lstrip("-").replace("-", "_")
    return {"options": [name], "dest": dest, "kind": "store", "type": "str", **extra}


def _catalog(version: str, *flags: dict[str, Any]) -> Catalog:
    data = {"sglang_version": version, "flags": list(flags), "builtin_speculative_algorithms": []}
    return Catalog.from_dict(data)


STAND_IN = _catalog(
    "0.5.23",
    _flag("--attention-backend", choices=["fa3", "flashinfer", "triton"], default=None),
    _flag("--mamba-radix-cache-strategy", choices=["auto", "extra_buffer"], default="auto"),
    _flag("--mem-fraction-static", default=None),
    _flag("--page-size", default=1),
)
IMAGE = _catalog(
    "0.5.22.dev",
    _flag("--attention-backend", choices=["fa3", "flashinfer"], default=None),
    _flag("--mamba-scheduler-strategy", choices=["auto", "extra_buffer"], default="auto"),
    _flag("--mem-fraction-static", default=None),
    _flag("--page-size", default=64),
)


def test_drift_names_added_removed_and_changed_options() -> None:
    used = [
        "--attention-backend",
        "--mamba-radix-cache-strategy",
        "--mamba-scheduler-strategy",
        "--mem-fraction-static",
        "--page-size",
    ]
    assert catalog_drift(STAND_IN, IMAGE, used) == [
        "--attention-backend: choices {fa3, flashinfer, triton} -> {fa3, flashinfer}",
        "--mamba-radix-cache-strategy: removed (the image's SGLang has no such option)",
        "--mamba-scheduler-strategy: added (the stand-in catalog lacks it)",
        "--page-size: default 1 -> 64",
    ]


def test_drift_covers_only_the_options_the_recipe_uses() -> None:
    assert catalog_drift(STAND_IN, IMAGE, ["--mem-fraction-static"]) == []
    assert catalog_drift(STAND_IN, STAND_IN, ["--page-size", "--attention-backend"]) == []
    assert catalog_drift(STAND_IN, IMAGE, ["--page-size", "--page-size"]) == [
        "--page-size: default 1 -> 64"
    ]
