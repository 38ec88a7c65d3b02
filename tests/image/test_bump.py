"""`repro image bump` against a real registry on 127.0.0.1 holding two versions of an image:
the simulator's SGLang surface as v1, and v2 where an option went away and a default moved."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from repro.image.bump import bump_image
from repro.image.engine import client
from repro.image.image_catalog import pull_pinned
from repro.recipe.argv_check import catalog_file_name
from repro.recipe.images import load_image_spec
from tests.support.registry import Registry, docker_login

pytestmark = pytest.mark.docker

SPEC = """\
# a nightly-like spec on the test registry
base:
  image: {repository}
  tag: v1
  digest: {digest}
  digest_unverified: true  # the placeholder state bump clears
sglang_version: "0.5.23"
cuda_version: "13.0"
gpu_architectures: ["12.0"]
"""

RECIPE = """\
image: nightly
model: {{repo: org/model, revision: main}}
parallelism: {{tp: 1}}
topology: {{gpus: 1, gpu_models: ["RTX PRO 6000"]}}
bench: {{concurrencies: [1], prompts_per_level: 4}}
server: {{extra_args: [{extra}]}}
"""


def _v2_catalog(path: Path) -> None:
    """SGLang 0.5.23's options without --mamba-radix-cache-strategy and with another default
    chunked prefill size: what a newer nightly could bring."""
    shipped = resources.files("repro").joinpath("catalogs", catalog_file_name("0.5.23"))
    data = json.loads(shipped.read_text())
    data["flags"] = [f for f in data["flags"] if f["dest"] != "mamba_radix_cache_strategy"]
    for flag in data["flags"]:
        if flag["dest"] == "chunked_prefill_size":
            flag["default"] = 16384
    path.write_text(json.dumps(data))


def _push_two_versions(registry: Registry, sim_image: str, tmp_path: Path) -> str:
    repository = f"{registry.host}/team/sglang"
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    v1.mkdir()
    v2.mkdir()
    (v1 / "Dockerfile").write_text(f"FROM {sim_image}\nLABEL repro.test=v1\n")
    _v2_catalog(v2 / "catalog.json")
    (v2 / "Dockerfile").write_text(
        f"FROM {sim_image}\nCOPY catalog.json /opt/v2-catalog.json\n"
        "ENV REPRO_SIM_CATALOG=/opt/v2-catalog.json\n"
    )
    assert docker_login(registry).returncode == 0
    for tag, context in (("v1", v1), ("v2", v2)):
        client().build(context, tags=[f"{repository}:{tag}"], load=True, progress=False)
        client().image.push(f"{repository}:{tag}", quiet=True)
    return repository


def test_bump_prints_each_recipes_drift_then_repins(
    registry: Registry, sim_image: str, tmp_path: Path
) -> None:
    repository = _push_two_versions(registry, sim_image, tmp_path)
    v1_digest = pull_pinned(f"{repository}:v1").rsplit("@", 1)[1]
    project = tmp_path / "project"
    (project / "images").mkdir(parents=True)
    (project / "recipes").mkdir()
    spec_path = project / "images" / "nightly.yaml"
    spec_path.write_text(SPEC.format(repository=repository, digest=v1_digest))
    (project / "recipes" / "hybrid.yaml").write_text(
        RECIPE.format(extra="--mamba-radix-cache-strategy, extra_buffer")
    )
    (project / "recipes" / "plain.yaml").write_text(
        RECIPE.format(extra="--chunked-prefill-size, '8192'")
    )
    (project / "recipes" / "other.yaml").write_text(
        RECIPE.format(extra="").replace("image: nightly", "image: elsewhere")
    )

    dry = bump_image("nightly", "v2", images_dir=project / "images", write=False)
    assert dry.written is None and spec_path.read_text().count("tag: v1") == 1
    bump = bump_image("nightly", "v2", images_dir=project / "images")
    by_recipe = {d.recipe: d for d in bump.recipes}
    assert sorted(by_recipe) == ["hybrid", "plain"]  # "other" runs another image
    hybrid = by_recipe["hybrid"]
    assert hybrid.changes == [
        "--mamba-radix-cache-strategy: removed (the image's SGLang has no such option)"
    ]
    assert hybrid.new_errors == [
        "server.extra_args[0]: unknown SGLang option '--mamba-radix-cache-strategy' (did you "
        "mean '--radix-cache-backend'?)"
    ]
    plain = by_recipe["plain"]
    assert plain.changes == ["--chunked-prefill-size: default None -> 16384"]
    assert plain.new_errors == []
    # re-pinned: the tag and the digest the registry gave, no longer a placeholder
    v2_digest = pull_pinned(f"{repository}:v2").rsplit("@", 1)[1]
    spec = load_image_spec(spec_path)
    assert (spec.base.tag, spec.base.digest, spec.base.digest_unverified) == (
        "v2",
        v2_digest,
        False,
    )
    assert bump.new == f"{repository}:v2@{v2_digest}" and v2_digest != v1_digest
    assert spec_path.read_text().startswith("# a nightly-like spec on the test registry\n")


def test_the_printed_drift_names_each_recipe_and_what_breaks() -> None:
    from repro.cli.image import bump_lines
    from repro.image.bump import Bump, RecipeDrift

    result = Bump(
        spec="nightly",
        old="r:v1@sha256:" + "1" * 64,
        new="r:v2@sha256:" + "2" * 64,
        old_catalog="SGLang 0.5.17 (the stand-in release catalog)",
        new_catalog="SGLang 0.0.0.dev1+gabc (the image's own)",
        recipes=[
            RecipeDrift("plain", 9),
            RecipeDrift("hybrid", 10, ["--x: removed"], ["server.extra_args[0]: unknown"]),
        ],
        written=Path("images/nightly.yaml"),
    )
    assert bump_lines(result)[3:] == [
        "plain: no change to the 9 options it uses",
        "hybrid:",
        "  --x: removed",
        "  no longer checks: server.extra_args[0]: unknown",
        "re-pinned images/nightly.yaml; `repro lock NAME` builds on it",
    ]
