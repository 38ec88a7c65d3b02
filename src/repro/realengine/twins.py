"""Tiny twins of a recipe's model and drafter: the same architectures, scaled down, seeded.

A twin has the architecture string and every config field SGLang 0.5.23 reads for its model
class, with layers, hidden size and experts scaled down, random weights under the checkpoint
names that class's ``load_weights`` accepts, a tokenizer and a chat template with the real
model's thinking switch. The engine dry-start points SGLang's ``--model-path`` at them, and a
GPU run can serve them before the real weights are downloaded.

``twin_for(recipe)`` says which twins a recipe needs (no I/O); ``ensure_twins(recipe)`` makes
them with the engine's Python (``twingen.py``, which does not import repro), the same bytes for
the same seed, and publishes each into the Hub cache as one commit (``repro.hub.publish``), so
that a recipe naming the twin's repository locks and serves it with the Hub offline.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repro.errors import ReproError
from repro.lock.draft_tokens import drafter_block_size
from repro.schema.lock import Lock
from repro.schema.recipe import Recipe
from repro.settings import SGLANG_PYTHON

GENERATOR = Path(__file__).with_name("twingen.py")
MARKER = "repro-twin.json"  # in each twin: what made it (kind, seed, generator digest)
GENERATE_TIMEOUT_S = 600


class TwinError(ReproError):
    """A recipe whose model or drafter has no twin, or a twin that could not be made."""


@dataclass(frozen=True)
class ModelTwin:
    """A target architecture the project twins: twingen.py's kind and the Hub name."""

    kind: str
    repo: str


# The shipped recipes' models (follow `extends:`), keyed by the real repository.
MODEL_TWINS: dict[str, ModelTwin] = {
    "moonshotai/Kimi-K2.6": ModelTwin("kimi_k25", "repro-twin/kimi-k2.6"),
    "nvidia/Kimi-K2.6-NVFP4": ModelTwin("kimi_k25_nvfp4", "repro-twin/kimi-k2.6-nvfp4"),
    "Qwen/Qwen3.6-27B": ModelTwin("qwen3_5", "repro-twin/qwen3.6-27b"),
    # the tiny Qwen3's twin is itself, under its own name: `repro image tiny-model` (Docker)
    # keeps `main` of repro-tiny/qwen3-tiny without the twin's marker file
    "repro-tiny/qwen3-tiny": ModelTwin("qwen3", "repro-twin/qwen3-tiny"),
    # the simulator's made-up chat model (recipe demo, DFLASH with 8 draft tokens): the tiny
    # Qwen3 stands in for it, so SGLang's start-up can run on the demo's flags too
    "repro-sim/tiny-chat": ModelTwin("qwen3", "repro-twin/qwen3-tiny"),
}
# speculative.algorithm -> the drafter architecture twingen.py writes
DRAFTER_KINDS = {"DFLASH": "dflash", "DDTREE": "dflash", "EAGLE3": "eagle3"}


@dataclass(frozen=True)
class TwinSpec:
    """Which twins a recipe needs: the model's kind and repository, and the drafter's
    (kind None: the recipe has no drafter)."""

    model_kind: str
    model_repo: str
    drafter_kind: str | None = None
    drafter_repo: str | None = None
    block_size: int | None = None  # DFlash only


# The Kimi twin's text model alone (DeepseekV3ForCausalLM, the same weights): what a GPU
# serves, and what loads on the CPU engine, where the vision processor of
# KimiK25ForConditionalGeneration cannot load (docs/real-engine.md).
KIMI_TEXT_TWIN = TwinSpec("kimi_k25_text", "repro-twin/kimi-k2.6-text")


@dataclass(frozen=True)
class Twins:
    """Twins in the Hub cache: snapshot folders a ``--model-path`` can point at."""

    model_dir: Path
    drafter_dir: Path | None
    model_repo: str
    drafter_repo: str | None


def twin_for(recipe: Recipe, lock: Lock | None = None) -> TwinSpec:
    """The twins of `recipe`'s model and drafter (no I/O). A model or algorithm without a
    twin is a TwinError naming the recipe field. A DFlash drafter twin has the block size of
    the drafter it stands for, from `lock` where it read the config.json, else the assumed one
    (repro.lock.draft_tokens): SGLang's start-up then resolves the draft tokens the simulator
    serves."""
    model = MODEL_TWINS.get(recipe.model.repo)
    if model is None:
        raise TwinError(
            f"recipe {recipe.name}: model.repo {recipe.model.repo} has no tiny twin",
            hint="twins exist for " + ", ".join(sorted(MODEL_TWINS)),
        )
    if recipe.drafter is None or recipe.speculative is None:
        return TwinSpec(model.kind, model.repo)
    algorithm = recipe.speculative.algorithm
    kind = DRAFTER_KINDS.get(algorithm)
    if kind is None:
        raise TwinError(
            f"recipe {recipe.name}: speculative.algorithm {algorithm} has no drafter twin",
            hint="drafter twins exist for " + ", ".join(sorted(DRAFTER_KINDS)),
        )
    if kind == "eagle3":
        return TwinSpec(model.kind, model.repo, kind, f"{model.repo}-eagle3")
    found = drafter_block_size(recipe, lock)
    if found is None:
        raise TwinError(
            f"recipe {recipe.name}: the block size of drafter {recipe.drafter.repo} is unknown",
            hint=f"`repro lock {recipe.name}` reads it from the drafter's config.json",
        )
    block = found.value
    return TwinSpec(model.kind, model.repo, kind, f"{model.repo}-dflash-b{block}", block)


def _generator_digest() -> str:
    scripts = (GENERATOR, GENERATOR.with_name("tinymodel.py"))
    digest = hashlib.sha256()
    for script in scripts:
        digest.update(script.read_bytes())
    return digest.hexdigest()[:16]


def marker(kind: str, seed: int, block_size: int | None = None) -> dict[str, object]:
    """What a twin's MARKER file holds: a cached twin with another marker is made again."""
    made: dict[str, object] = {"kind": kind, "seed": seed, "generator": _generator_digest()}
    if block_size is not None:
        made["block_size"] = block_size
    return made


def _cached(cache: Path, repo: str, want: dict[str, object]) -> Path | None:
    from repro.hub.cache import storage_dir

    storage = storage_dir(cache, repo)
    ref = storage / "refs" / "main"
    if not ref.is_file():
        return None
    snapshot = storage / "snapshots" / ref.read_text().strip()
    try:
        made = json.loads((snapshot / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return snapshot if made == want else None


def _plan(specs: list[TwinSpec], out: Path, seed: int) -> dict[str, Any]:
    """twingen.py's plan for `specs`: each model once, with every drafter asked of it."""
    models: dict[str, dict[str, Any]] = {}
    for spec in specs:
        model = models.setdefault(
            spec.model_repo,
            {
                "kind": spec.model_kind,
                "out": str(out / spec.model_repo),
                "marker": marker(spec.model_kind, seed),
                "drafters": [],
            },
        )
        if spec.drafter_kind is None or spec.drafter_repo is None:
            continue
        drafter = {
            "kind": spec.drafter_kind,
            "out": str(out / spec.drafter_repo),
            "block_size": spec.block_size,
            "marker": marker(spec.drafter_kind, seed, spec.block_size),
        }
        if drafter not in model["drafters"]:
            model["drafters"].append(drafter)
    return {"seed": seed, "models": list(models.values())}


def generate(
    specs: list[TwinSpec], out: Path, *, seed: int = 0, python: Path | None = None
) -> None:
    """Write the twins of `specs` into `out/<repo>` with the engine's Python, in one process;
    the same seed gives the same bytes."""
    engine = python or Path(SGLANG_PYTHON.text())
    if not engine.is_file():
        raise TwinError(
            f"SGLang's engine Python {engine} is not there",
            hint="make it with `scripts/ensure-sglang` (or `make sglang-engine`)",
        )
    plan = out / "plan.json"
    plan.write_text(json.dumps(_plan(specs, out, seed)))
    done = subprocess.run(
        [str(engine), str(GENERATOR), str(plan)],
        capture_output=True,
        text=True,
        timeout=GENERATE_TIMEOUT_S,
        check=False,
        env={"HF_HUB_OFFLINE": "1", "TQDM_DISABLE": "1", "PATH": "/usr/bin:/bin"},
    )
    if done.returncode != 0:
        kinds = ", ".join(sorted({s.model_kind for s in specs}))
        raise TwinError(
            f"making the twins ({kinds}) failed (exit {done.returncode}):\n" + done.stderr[-2000:]
        )


def _cached_twins(cache: Path, spec: TwinSpec, seed: int) -> Twins | None:
    model = _cached(cache, spec.model_repo, marker(spec.model_kind, seed))
    if model is None:
        return None
    if spec.drafter_kind is None or spec.drafter_repo is None:
        return Twins(model, None, spec.model_repo, None)
    drafter = _cached(cache, spec.drafter_repo, marker(spec.drafter_kind, seed, spec.block_size))
    if drafter is None:
        return None
    return Twins(model, drafter, spec.model_repo, spec.drafter_repo)


def ensure_all_twins(
    recipes: list[Recipe],
    *,
    python: Path | None = None,
    seed: int = 0,
    cache_dir: Path | None = None,
    locks: list[Lock | None] | None = None,
) -> list[Twins]:
    """The twins of each of `recipes` (with its lock in `locks`, where given) in the Hub cache
    (`cache_dir`, else huggingface_hub's own), those absent (or made by another seed or
    generator) made in one engine process and published as `main` of their repositories."""
    specs = [
        twin_for(recipe, lock)
        for recipe, lock in zip(recipes, locks or [None] * len(recipes), strict=True)
    ]
    return ensure_specs(specs, python=python, seed=seed, cache_dir=cache_dir)


def ensure_specs(
    specs: list[TwinSpec],
    *,
    python: Path | None = None,
    seed: int = 0,
    cache_dir: Path | None = None,
) -> list[Twins]:
    """`ensure_all_twins` for twins named directly (e.g. `KIMI_TEXT_TWIN`)."""
    from repro.hub import cache_root  # deferred: huggingface_hub
    from repro.hub.publish import publish_folder

    cache = cache_root(cache_dir)
    missing = [spec for spec in specs if _cached_twins(cache, spec, seed) is None]
    if missing:
        with tempfile.TemporaryDirectory(prefix="repro-twin-") as tmp:
            out = Path(tmp)
            generate(missing, out, seed=seed, python=python)
            for spec in missing:
                publish_folder(spec.model_repo, out / spec.model_repo, cache)
                if spec.drafter_repo is not None:
                    publish_folder(spec.drafter_repo, out / spec.drafter_repo, cache)
    found = [_cached_twins(cache, spec, seed) for spec in specs]
    assert all(found), "twins published but not found in the cache"
    return [t for t in found if t is not None]


def ensure_twins(
    recipe: Recipe, *, python: Path | None = None, seed: int = 0, cache_dir: Path | None = None
) -> Twins:
    """The twins of `recipe` (see `ensure_all_twins`): snapshot folders in the Hub cache."""
    (twins,) = ensure_all_twins([recipe], python=python, seed=seed, cache_dir=cache_dir)
    return twins
