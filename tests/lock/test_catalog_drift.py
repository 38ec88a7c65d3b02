"""The drift between the stand-in catalog and the image's own, for the options a recipe uses
(what `repro image build` prints after it puts the image's catalog into the lock)."""

from __future__ import annotations

from typing import Any

from repro.lock import catalog_drift
from repro.schema.option_catalog import Catalog


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


def test_drift_from_the_shipped_catalog_covers_every_option() -> None:
    from dataclasses import replace

    from repro.image.locked_image import shipped_catalog_drift
    from repro.recipe import load_catalog

    shipped = load_catalog("0.5.23")
    assert shipped_catalog_drift(shipped) == []
    page = shipped.find("--page-size")
    assert page is not None
    backend = shipped.find("--sampling-backend")
    assert backend is not None and backend.choices  # a set in SGLang: any order is the same
    reordered = replace(backend, choices=tuple(reversed(backend.choices)))
    changed = [
        replace(o, default=64) if o is page else reordered if o is backend else o
        for o in shipped.options
    ]
    without = [o for o in changed if not o.name.startswith("--enable-metrics")]
    own = Catalog("0.5.23", without, shipped.speculative_algorithms)
    drift = shipped_catalog_drift(own)
    assert drift is not None and "--page-size: default None -> 64" in drift
    assert any(line.startswith("--enable-metrics") and "removed" in line for line in drift)
    assert shipped_catalog_drift(Catalog("0.0.1", [], [])) is None  # repro ships none


def test_a_kernel_change_between_two_images_is_a_drift_line() -> None:
    from repro.lock import diff_components
    from repro.schema.lock import LockedImage

    def image(kernel: str | None, flashinfer: str) -> LockedImage:
        manifest = {"sglang_version": "0.5.18", "sgl_kernel": kernel, "flashinfer": flashinfer}
        return LockedImage.model_validate(
            {"reference": "repro/x:1", "fingerprint": "sha256:" + "1" * 64, "manifest": manifest}
        )

    old, new = image("0.4.5", "0.6.1"), image("0.4.6.post1", "0.6.1")
    assert new.components["sglang-kernel"] == "0.4.6.post1"
    assert diff_components(old, new) == ["image sglang-kernel: 0.4.5 -> 0.4.6.post1"]
    assert diff_components(old, old) == [] and diff_components(None, new) == []
    assert diff_components(image(None, "0.6.1"), old) == ["image sglang-kernel: - -> 0.4.5"]
