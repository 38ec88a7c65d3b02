"""The option catalog (shipped as package data) and image specs with patch-set declarations."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from repro.errors import RecipeError
from repro.lock.locked import resolved
from repro.recipe import check_argv, load_catalog
from repro.recipe.argv_check import available_catalog_versions
from repro.recipe.images import (
    ImageSpecError,
    ImageSpecNotFound,
    catalog_version,
    effective_catalog,
    list_image_specs,
    load_image_spec,
)
from repro.schema.image import ImageSpec
from repro.schema.option_catalog import Catalog, CatalogOption

from .conftest import REPO_ROOT, Project

SHIPPED_JSON = resources.files("repro").joinpath("catalogs", "sglang-0.5.23.json")


# --- catalog --------------------------------------------------------------------------------
def test_shipped_catalog_is_its_json() -> None:
    catalog = load_catalog("0.5.23")
    assert "0.5.23" in available_catalog_versions()
    dumped = json.loads(SHIPPED_JSON.read_text())
    assert len(catalog.options) == len(dumped["flags"]) == 532
    assert catalog.speculative_algorithms == dumped["builtin_speculative_algorithms"]
    assert catalog.find("--tp") is None and catalog.find("--tensor-parallel-size") is catalog.find(
        "--tp-size"
    )


def test_unknown_catalog_version() -> None:
    with pytest.raises(RecipeError) as info:
        load_catalog("0.5.2")
    assert "no SGLang option catalog for version '0.5.2'" in info.value.message
    assert "0.5.23" in (info.value.hint or "")


def test_deprecated_options_name_their_replacement() -> None:
    catalog = load_catalog("0.5.23")
    deprecated = {o.name: o.replacement for o in catalog.options if o.deprecated}
    assert set(deprecated) == {
        "--disable-cuda-graph",
        "--enable-dp-attention",
        "--monokernel-backend",
    }
    assert all(deprecated.values())


def test_check_argv_arity_and_choices() -> None:
    catalog = load_catalog("0.5.23")
    parsed, problems = check_argv(
        ["--cuda-graph-bs-decode", "1", "2", "--disable-radix-cache", "--port", "-1"], catalog
    )
    assert problems == []
    assert [p.values for p in parsed] == [("1", "2"), (), ("-1",)]
    _, problems = check_argv(["--cuda-graph-bs-decode", "--port"], catalog)
    assert [p.message for p in problems] == [
        "'--cuda-graph-bs-decode' needs a value",
        "'--port' needs a value",
    ]
    _, problems = check_argv(
        ["--context-length", "128k", "--default-chat-template-kwargs", "{bad"], catalog
    )
    assert [p.message for p in problems] == [
        "--default-chat-template-kwargs expects a JSON value, got '{bad'"
    ]


def test_catalog_round_trips_and_extends() -> None:
    catalog = load_catalog("0.5.23")
    again = Catalog.from_dict(json.loads(json.dumps(catalog.to_dict())))
    assert [o.options for o in again.options] == [o.options for o in catalog.options]
    extra = CatalogOption(options=("--x-new",), dest="x_new", kind="store", type="int")
    bigger = catalog.extended([extra], ["NEWALGO"], ["NEW_ENV"])
    assert bigger.has("--x-new") and bigger.has_algorithm("NEWALGO") and "NEW_ENV" in bigger.env
    assert not catalog.has("--x-new")
    with pytest.raises(RecipeError, match="already has: --tp-size"):
        catalog.extended([CatalogOption(options=("--tp-size",), dest="t", kind="store")])


def test_not_a_catalog() -> None:
    with pytest.raises(RecipeError, match="not an SGLang option catalog"):
        Catalog.from_dict({"flags": [{"options": []}]})


# --- image specs ----------------------------------------------------------------------------
def test_shipped_image_specs_load(project: Project) -> None:
    assert list_image_specs(project.images) == [
        "sglang-0.5.15-cu13-ddtree",
        "sglang-0.5.23-cpu",
        "sglang-0.5.23-cu13",
        "sglang-nightly-cu13",
        "sim",
    ]
    nightly = load_image_spec("sglang-nightly-cu13", project.images)
    assert nightly.base.reference.startswith("lmsysorg/sglang:nightly-dev-cu13-")
    assert nightly.base.digest and nightly.base.digest_unverified
    assert nightly.gpu_architectures == ["9.0", "10.0", "10.3", "12.0"]
    # The nightly's own SGLang is a dev build of 2026-08-17; the newest release built before it
    # (0.5.17, 2026-08-08) stands in until the lock, as it is: nothing added or removed.
    assert nightly.base.sglang_commit == "d91c3682b0b429e4c70df63cd57f819588ce29b0"
    assert nightly.base.sglang_version == "0.0.0.dev1+gd91c3682b"
    assert nightly.base.sglang_commit_date == "2026-08-17"
    assert nightly.sglang_version == "0.0.0.dev1" and catalog_version(nightly) == "0.5.17"
    catalog = effective_catalog(nightly)
    assert catalog.sglang_version == "0.5.17" and catalog.released == "2026-08-08"
    assert len(catalog.options) == len(load_catalog("0.5.17").options)
    # the era's spellings: the radix-cache strategy is the option, the scheduler one an alias
    assert catalog.find("--mamba-radix-cache-strategy") is not None
    old = catalog.find("--mamba-scheduler-strategy")
    assert old is not None and old.deprecated and old.replacement == "--mamba-radix-cache-strategy"
    assert catalog.find("--attn-dp-size") is None and load_catalog("0.5.23").has("--attn-dp-size")
    sim = load_image_spec("sim", project.images)
    assert (
        sim.simulated
        and sim.base.local
        and sim.base.digest is None
        and sim.base.image == "repro-sim-base"
    )


def test_ddtree_spec_provides_the_algorithm_and_option(project: Project) -> None:
    spec = load_image_spec("sglang-0.5.15-cu13-ddtree", project.images)
    assert spec.patch_set is not None and spec.patch_set.local == []
    [diff] = spec.patch_set.remote
    assert diff.pull_request == 29907 and diff.head_commit and diff.head_commit in diff.url
    assert diff.sha256 is not None  # the DDTree hunks on 0.5.15 (scripts/ddtree-patch)
    catalog = effective_catalog(spec)
    assert catalog.has_algorithm("DDTREE")
    budget = catalog.find("--speculative-ddtree-budget")
    assert budget is not None and budget.provided_by == "ddtree" and budget.type == "int"
    assert "SGLANG_DDTREE_MAX_TOPK" in catalog.env
    assert not load_catalog("0.5.23").has_algorithm("DDTREE")


def spec_text(**changes: str) -> str:
    text = (REPO_ROOT / "images" / "sglang-nightly-cu13.yaml").read_text()
    for old, new in changes.items():
        text = text.replace(old.replace("_", " ") if old.startswith("x") else old, new)
    return text


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("  digest: sha256:", "  #", "base.digest: a registry base is pinned by digest"),
        ("  tag: nightly", "  #", "base.tag: a registry base needs a tag"),
        ("sha256:fa87", "sha256:FA87", "base.digest: expected a digest sha256:<64 hex digits>"),
        ('["9.0", "10.0", "10.3", "12.0"]', '["8.0"]', "gpu_architectures[0]: expected one of"),
        ('["9.0", "10.0", "10.3", "12.0"]', "[]", "gpu_architectures: a GPU image lists"),
        ("pip: []", "pip: [torch]", "pip: 'torch' is not pinned as package==version"),
        (
            'sglang_version: "0.0.0.dev1"',
            "sglang_version: latest",
            "sglang_version: expected a version",
        ),
        (
            'sglang_version: "0.0.0.dev1"',
            'sglang_version: "0.5.23"',
            "sglang_version: the base's SGLang reports 0.0.0.dev1+gd91c3682b",
        ),
        ("  sglang_commit: d91c", "  sglang_commit: D91C", "base.sglang_commit: expected a full"),
        ("cuda_version:", "cuda:", "cuda: unknown key 'cuda' (did you mean 'cuda_version'?)"),
    ],
)
def test_bad_image_specs(project: Project, old: str, new: str, expected: str) -> None:
    text = (project.images / "sglang-nightly-cu13.yaml").read_text()
    assert old in text
    project.write("bad.yaml", text.replace(old, new), folder="images")
    with pytest.raises(ImageSpecError) as info:
        load_image_spec("bad", project.images)
    assert any(
        line.startswith("images/bad.yaml: ") and expected in line for line in info.value.problems
    ), info.value.problems


def test_a_recipe_on_a_broken_image_spec_gets_one_finding_at_its_image(project: Project) -> None:
    from repro.recipe import check_recipe, load_recipe

    text = (project.images / "sglang-nightly-cu13.yaml").read_text()
    project.write("bad.yaml", text.replace("pip: []", "pip: [torch]"), folder="images")
    project.recipe("on-bad", "extends: kimi26-ep4-dflash\nimage: bad\n")
    findings = check_recipe(resolved(load_recipe("on-bad")))
    image = [f for f in findings if f.path == "image"]
    assert [(f.severity, f.rule) for f in image] == [("error", "image")]
    assert image[0].message.startswith("invalid image spec: images/bad.yaml: pip: 'torch'")


def test_numbers_in_yaml_become_versions(project: Project) -> None:
    text = (project.images / "sglang-nightly-cu13.yaml").read_text()
    text = text.replace('cuda_version: "13.0"', "cuda_version: 13.0").replace(
        '["9.0", "10.0", "10.3", "12.0"]', "[9.0, 10.0, 10.3, 12]"
    )
    project.write("num.yaml", text, folder="images")
    spec = load_image_spec("num", project.images)
    assert spec.cuda_version == "13.0"
    assert spec.gpu_architectures == ["9.0", "10.0", "10.3", "12.0"]


def test_remote_diff_must_name_its_head_commit(project: Project) -> None:
    text = (project.images / "sglang-0.5.15-cu13-ddtree.yaml").read_text()
    project.write(
        "moving.yaml", text.replace("main...93e9850e", "main...pull-head-"), folder="images"
    )
    with pytest.raises(ImageSpecError, match=r"patch_set.remote\[0\].url: must name head_commit"):
        load_image_spec("moving", project.images)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://github.com/sgl-project/sglang/pull/1.diff", "expected an https:// URL"),
        ("https://github.com/a b.diff", "expected an https:// URL without spaces"),
        ("https://github.com/" + "x" * 2000 + ".diff", "2008"),
    ],
)
def test_remote_diff_url_is_one_https_url(project: Project, url: str, expected: str) -> None:
    text = (project.images / "sglang-0.5.15-cu13-ddtree.yaml").read_text()
    start = text.index("url: ") + len("url: ")
    end = text.index("\n", start)
    project.write("badurl.yaml", text[:start] + repr(url) + text[end:], folder="images")
    with pytest.raises(ImageSpecError, match=rf"patch_set.remote\[0\].url: .*{expected}"):
        load_image_spec("badurl", project.images)


def test_local_patch_files_must_exist(project: Project) -> None:
    text = (project.images / "sglang-0.5.15-cu13-ddtree.yaml").read_text()
    project.write(
        "local.yaml", text.replace("  local: []", "  local: [0001-fix.patch]"), folder="images"
    )
    with pytest.raises(
        ImageSpecError, match=r"patch_set.local\[0\]: no file patches/ddtree/0001-fix.patch"
    ):
        load_image_spec("local", project.images)
    project.write("ddtree/0001-fix.patch", "--- a\n+++ b\n", folder="patches")
    spec = load_image_spec("local", project.images)
    assert spec.local_patch_paths(project.root / "patches") == [
        project.root / "patches" / "ddtree" / "0001-fix.patch"
    ]


def test_provided_option_clashing_with_sglang(project: Project) -> None:
    text = (project.images / "sglang-0.5.15-cu13-ddtree.yaml").read_text()
    project.write(
        "clash.yaml",
        text.replace("--speculative-ddtree-budget", "--speculative-num-steps"),
        folder="images",
    )
    spec = load_image_spec("clash", project.images)
    with pytest.raises(RecipeError, match="already has: --speculative-num-steps"):
        effective_catalog(spec)


def test_missing_image_spec(project: Project) -> None:
    with pytest.raises(ImageSpecNotFound) as info:
        load_image_spec("sglang-nightly-cu31", project.images)
    assert "did you mean 'sglang-nightly-cu13'" in info.value.message


def test_image_spec_json_schema_has_descriptions() -> None:
    schema = ImageSpec.model_json_schema()
    assert "description" in schema["properties"]["sglang_version"]


def test_images_dir_env(project: Project, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from repro.recipe import check_recipe, load_recipe

    monkeypatch.setenv("REPRO_IMAGES_DIR", str(tmp_path / "none"))
    findings = check_recipe(resolved(load_recipe("demo")))
    assert [(f.path, f.rule) for f in findings] == [("image", "image")]
    assert "no image spec 'sim'" in findings[0].message


def test_a_cpu_image_carries_no_gpu_kernels_and_its_recipes_reserve_no_gpu(
    project: Project,
) -> None:
    from repro.recipe import check_recipe, load_recipe

    spec = (project.images / "sglang-0.5.23-cpu.yaml").read_text()
    project.write("cpu-cuda.yaml", spec + 'gpu_architectures: ["9.0"]\n', folder="images")
    with pytest.raises(RecipeError, match="a CPU image carries no GPU kernels"):
        load_image_spec("cpu-cuda", project.images)
    assert check_recipe(resolved(load_recipe("qwen3-tiny-cpu"))) == []
    project.recipe(
        "tiny-gpu", "extends: qwen3-tiny-cpu\ntopology: {gpus: 1, gpu_runtime: nvidia}\n"
    )
    errors = {f.path: f.message for f in check_recipe(resolved(load_recipe("tiny-gpu")))}
    assert "set gpu_runtime: none" in errors["topology.gpu_runtime"]
    assert "set gpus: 0" in errors["topology.gpus"]
