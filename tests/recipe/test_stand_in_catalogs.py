"""A nightly's stand-in catalog: the newest release built before its commit, held to that."""

from __future__ import annotations

from datetime import date

import pytest

from repro.recipe.argv_check import available_catalog_versions, load_catalog, release_before
from repro.recipe.images import (
    ImageSpecError,
    catalog_version,
    effective_catalog,
    list_image_specs,
    load_image_spec,
)

from .conftest import REPO_ROOT, Project

SHIPPED_IMAGES = REPO_ROOT / "images"
STAND_INS = [
    name
    for name in list_image_specs(SHIPPED_IMAGES)
    if load_image_spec(name, SHIPPED_IMAGES).stand_in_catalog is not None
]


def test_shipped_releases_are_dated_in_version_order() -> None:
    versions = available_catalog_versions()
    assert {"0.5.15", "0.5.17", "0.5.18", "0.5.23"} <= set(versions)
    dates = [load_catalog(v).released for v in versions]
    assert all(dates) and dates == sorted(dates)  # type: ignore[type-var]
    assert release_before(date(2026, 8, 17)) == "0.5.17"
    assert release_before(date(2026, 8, 21)) == "0.5.18"  # built that day
    assert release_before(date(2026, 7, 1)) is None


@pytest.mark.parametrize("name", STAND_INS)
def test_each_nightly_stand_in_is_the_release_it_claims(name: str) -> None:
    spec = load_image_spec(name, SHIPPED_IMAGES)
    assert spec.stand_in_catalog is not None and spec.base.sglang_commit_date is not None
    chosen = release_before(date.fromisoformat(spec.base.sglang_commit_date))
    assert spec.stand_in_catalog.version in (None, chosen)
    assert catalog_version(spec) == chosen
    releases = [load_catalog(v) for v in available_catalog_versions()]
    # what the spec adds no release holds; what it removes, the release it claims has
    for option in spec.stand_in_catalog.adds:
        assert not any(r.has(option.name) for r in releases), option.name
    for option in spec.stand_in_catalog.lacks:
        assert load_catalog(chosen or "").has(option), option
    assert effective_catalog(spec).sglang_version == chosen


def test_a_stand_in_claiming_another_release_is_refused(project: Project) -> None:
    text = (project.images / "sglang-nightly-cu13.yaml").read_text()
    project.write("old.yaml", text.replace('version: "0.5.17"', 'version: "0.5.23"'), "images")
    with pytest.raises(ImageSpecError) as info:
        effective_catalog(load_image_spec("old", project.images))
    assert info.value.message == (
        "image spec old: stand_in_catalog.version: 0.5.23 is not the release before the base's "
        "SGLang commit (2026-08-17); that is 0.5.17 (built 2026-08-08)"
    )
    # left out, the date picks it
    project.write("auto.yaml", text.replace('  version: "0.5.17"\n', "  adds: []\n"), "images")
    assert effective_catalog(load_image_spec("auto", project.images)).sglang_version == "0.5.17"


def test_a_stand_in_needs_the_commit_date(project: Project) -> None:
    text = (project.images / "sglang-nightly-cu13.yaml").read_text()
    project.write("undated.yaml", text.replace("  sglang_commit_date: 2026-08-17\n", ""), "images")
    with pytest.raises(ImageSpecError) as info:
        load_image_spec("undated", project.images)
    assert any(
        "base.sglang_commit_date: a stand-in catalog is chosen" in p for p in info.value.problems
    )


def test_the_nightly_accepts_its_era_spelling_and_refuses_later_options(project: Project) -> None:
    from repro.lock.locked import resolved
    from repro.recipe import check_recipe, load_recipe

    project.recipe(
        "era",
        "extends: qwen36-27b-tp1-dflash\nserver:\n  extra_args: [--mamba-radix-cache-strategy, "
        "extra_buffer, --attn-dp-size, '2']\n",
    )
    findings = check_recipe(resolved(load_recipe("era")))
    errors = [f.message for f in findings if f.severity == "error"]
    assert errors == ["unknown SGLang option '--attn-dp-size' (did you mean '--attn-cp-size'?)"], (
        errors
    )
