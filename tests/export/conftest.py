"""Export tests run on a copy of the shipped recipes and image specs, with lock files made
from them as `repro lock` + `repro image push` would leave them (the image section holds
the pushed reference and its registry digest)."""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from repro.recipe import load_recipe
from repro.recipe.images import catalog_for_recipe, image_for_recipe
from repro.schema.lock import RepoPin

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = Path(__file__).resolve().parent / "schemas"
K8S_SCHEMAS = SCHEMAS / "kubernetes-v1.37.0-local-strict"

DIGEST = "sha256:" + "0123456789abcdef" * 4
PUSHED_REPOSITORY = "127.0.0.1:5000/team/sglang-nightly-cu13"
PUSHED_REFERENCE = f"{PUSHED_REPOSITORY}:0.5.23-1a2b3c4d5e6f"

# A two-node recipe: TP 16 over 2 nodes of 8 GPUs (one of the shipped kimi26 recipes, widened).
TWO_NODES = "extends: kimi26-tp8\nparallelism: {tp: 16}\ntopology: {gpus: 8, nodes: 2}\n"


class Project:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.recipes = root / "recipes"
        self.locks = root / "locks"

    def recipe(self, name: str, text: str) -> Path:
        path = self.recipes / f"{name}.yaml"
        path.write_text(text, encoding="utf-8")
        return path

    def lock(self, name: str, digest: str | None = DIGEST, **image: Any) -> Path:
        """locks/<name>.lock.json for recipe `name`; `digest=None`: built, not pushed."""
        recipe = load_recipe(name)
        section = {
            "reference": PUSHED_REFERENCE if digest else f"repro/{recipe.image}:0.5.23-1a2b",
            "image_id": "sha256:" + "9" * 64,
            "fingerprint": "sha256:" + "8" * 64,
            "digest": digest,
            "manifest": {},
            **image,
        }
        data = {
            "lock_version": 1,
            "repro_version": "0.1.0",
            "recipe": recipe.resolved(),
            "model": RepoPin.placeholder(recipe.model.repo, recipe.model.revision).model_dump(),
            "image_spec": image_for_recipe(recipe).model_dump(mode="json"),
            "catalog": catalog_for_recipe(recipe).to_dict(),
            "image": section,
        }
        self.locks.mkdir(exist_ok=True)
        path = self.locks / f"{name}.lock.json"
        path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Project]:
    """A copy of the project with a two-node recipe `kimi26-tp16-2n`; cwd is its root."""
    root = tmp_path / "proj"
    for folder in ("recipes", "images", "patches"):
        shutil.copytree(REPO_ROOT / folder, root / folder)
    monkeypatch.chdir(root)
    monkeypatch.delenv("REPRO_RECIPES_DIR", raising=False)
    monkeypatch.delenv("REPRO_IMAGES_DIR", raising=False)
    proj = Project(root)
    proj.recipe("kimi26-tp16-2n", TWO_NODES)
    yield proj


# --- schemas ----------------------------------------------------------------------------------
def _strict(node: Any) -> Any:
    """The CRD schema as the API server applies it: an unknown field is pruned (silently
    lost), which for a generated manifest is a bug, so here it is an error."""
    if isinstance(node, dict):
        out = {k: _strict(v) for k, v in node.items()}
        if (
            "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [_strict(v) for v in node]
    return node


@pytest.fixture(scope="session")
def lws_validator() -> Draft202012Validator:
    """The LeaderWorkerSet CRD's v1 OpenAPI schema (kubernetes-sigs/lws)."""
    text = gzip.decompress(
        (SCHEMAS / "lws" / "leaderworkerset.x-k8s.io_leaderworkersets.yaml.gz").read_bytes()
    )
    crd = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    [version] = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return Draft202012Validator(_strict(version["schema"]["openAPIV3Schema"]))


class K8sSchemas:
    def __init__(self) -> None:
        definitions = json.loads(
            gzip.decompress((K8S_SCHEMAS / "_definitions.json.gz").read_bytes())
        )
        resource = Resource.from_contents(definitions, default_specification=DRAFT202012)
        self.registry: Registry = Registry().with_resource(
            "https://kubernetes.io/api/_definitions.json", resource
        )

    def validator(self, kind: str) -> Draft202012Validator:
        """`Service`, `Deployment`, or a definition name like `core.v1.PodTemplateSpec`."""
        files = {"Service": "service-v1.json", "Deployment": "deployment-apps-v1.json"}
        if kind in files:
            schema = json.loads((K8S_SCHEMAS / files[kind]).read_text())
        else:
            schema = {
                "$id": "https://kubernetes.io/api/fragment",
                "$ref": f"/api/_definitions.json#/$defs/io.k8s.api.{kind}",
            }
        return Draft202012Validator(schema, registry=self.registry)


@pytest.fixture(scope="session")
def k8s_schemas() -> K8sSchemas:
    return K8sSchemas()


def errors_of(validator: Draft202012Validator, document: Any) -> list[str]:
    return [
        f"{'.'.join(str(p) for p in e.absolute_path)}: {e.message}"
        for e in validator.iter_errors(document)
    ]
