"""Recipe tests run on a copy of the shipped recipes, image specs and patches in a temp dir."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from repro.recipe import Finding, load_recipe
from repro.schema.recipe import Recipe

REPO_ROOT = Path(__file__).resolve().parents[2]
SHIPPED_RECIPES = sorted(p.stem for p in (REPO_ROOT / "recipes").glob("*.yaml"))


class Project:
    """A project directory: recipes/, images/, patches/ (copies of the shipped ones)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.recipes = root / "recipes"
        self.images = root / "images"

    def write(self, name: str, text: str, folder: str = "recipes") -> Path:
        path = self.root / folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def recipe(self, name: str, text: str) -> Path:
        return self.write(f"{name}.yaml", text)


def make_project(root: Path) -> Project:
    for folder in ("recipes", "images", "patches"):
        shutil.copytree(REPO_ROOT / folder, root / folder)
    return Project(root)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Project]:
    """A copy of the project; the current directory is its root."""
    proj = make_project(tmp_path / "proj")
    monkeypatch.chdir(proj.root)
    monkeypatch.delenv("REPRO_RECIPES_DIR", raising=False)
    monkeypatch.delenv("REPRO_IMAGES_DIR", raising=False)
    yield proj


# A minimal valid GPU recipe, for rule tests to change one field at a time.
BASE_RECIPE = """\
image: sglang-nightly-cu13
model: {repo: org/model, revision: main}
parallelism: {tp: 8}
topology: {gpus: 8, gpu_models: ["RTX PRO 6000"], interconnect: pcie}
bench: {concurrencies: [1, 2], prompts_per_level: 8}
"""

# Layers over BASE_RECIPE: a DFLASH deployment, and a DDTREE one on the patched image.
DFLASH = "drafter: {repo: org/drafter}\nspeculative: {algorithm: DFLASH}\nbench: {dataset: chat}\n"
DDTREE = (
    "image: sglang-0.5.15-cu13-ddtree\ndrafter: {repo: org/drafter}\n"
    "speculative: {algorithm: DDTREE, ddtree_budget: 15}\nbench: {dataset: chat}\n"
    "server: {extra_args: [--page-size, '1']}\n"
)


def load(project: Project, *layers: str, base: str = BASE_RECIPE, name: str = "r") -> Recipe:
    """`base`, then each YAML layer extending the previous one; the last is `name`."""
    project.recipe("base", base)
    parent = "base"
    layers = layers or ("",)
    for i, layer in enumerate(layers):
        current = name if i == len(layers) - 1 else f"layer{i}"
        project.recipe(current, f"extends: {parent}\n" + textwrap.dedent(layer))
        parent = current
    return load_recipe(name)


def by_rule(findings: list[Finding], rule: str) -> list[Finding]:
    return [f for f in findings if f.rule == rule]
