"""What a deployment needs from a machine, in doctor's own terms.

`Requirements` is deliberately small and independent of the recipe schema, so checks can be
written and tested against it alone; `requirements_from_recipe` is the one place that knows
how a recipe (and its image spec) spell these needs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, field_validator

from repro.errors import ReproError
from repro.topology.arch import normalize_arch


class Requirements(BaseModel):
    """Needs of one deployment; empty/None fields are not checked."""

    source: str | None = Field(default=None, description="recipe name or path these came from")
    gpus: int = Field(default=0, ge=0, description="GPUs needed on this node")
    gpu_models: list[str] = Field(default_factory=list, description='accepted, e.g. ["B200"]')
    min_gpu_memory_gb: float | None = Field(default=None, description="per GPU, decimal GB")
    interconnect: Literal["pcie", "nvlink", "any"] = "any"
    image: str | None = None
    architectures: list[str] = Field(
        default_factory=list, description='compute capabilities the image carries, e.g. ["12.0"]'
    )
    gpu_runtime: Literal["nvidia", "none"] = "nvidia"
    weights_bytes: int | None = Field(default=None, description="model + drafter bytes to download")
    nodes: int = Field(default=1, ge=1)
    env: dict[str, str] = Field(default_factory=dict, description="environment the server gets")
    server_args: list[str] = Field(default_factory=list, description="extra server argv")

    @field_validator("architectures", mode="before")
    @classmethod
    def _normalize(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return [normalize_arch(v) for v in value]
        return value

    @property
    def needs_gpus(self) -> bool:
        return self.gpu_runtime == "nvidia" and self.gpus > 0


def _get(obj: Any, *path: str, default: Any = None) -> Any:
    """obj.a.b (attributes or mapping keys), or `default` when any step is missing."""
    for name in path:
        if obj is None:
            return default
        obj = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
    return default if obj is None else obj


def requirements_from_recipe(recipe: Any, repo_root: Path | None = None) -> Requirements:
    """Requirements of a loaded recipe (`repro.recipe.load_recipe(ref)`).

    Reads parallelism {tp, pp, dp, dp_attention}, topology {gpus, gpu_models, interconnect,
    min_gpu_memory_gb, nodes, gpu_runtime}, env, server extra args and the image's
    architectures from images/<image>.yaml (field `gpu_architectures` or `architectures`).
    """
    tp = int(_get(recipe, "parallelism", "tp", default=1))
    pp = int(_get(recipe, "parallelism", "pp", default=1))
    dp = int(_get(recipe, "parallelism", "dp", default=1))
    dp_attention = bool(_get(recipe, "parallelism", "dp_attention", default=False))
    gpus = _get(recipe, "topology", "gpus")
    if gpus is None:
        gpus = tp * pp * (1 if dp_attention else dp)
    models = _get(recipe, "topology", "gpu_models", default=None)
    if models is None:
        single = _get(recipe, "topology", "gpu_model")
        models = [single] if single else []
    image = _get(recipe, "image")
    image_name = image if isinstance(image, str) else _get(image, "name")
    archs = _get(recipe, "image_spec", "gpu_architectures") or _get(image, "gpu_architectures")
    if archs is None and image_name:
        archs = image_architectures(image_name, repo_root)
    extra = _get(recipe, "server", "extra_args", default=[])
    return Requirements.model_validate(
        {
            "source": _get(recipe, "name"),
            "gpus": int(gpus),
            "gpu_models": [str(m) for m in models],
            "min_gpu_memory_gb": _get(recipe, "topology", "min_gpu_memory_gb"),
            "interconnect": str(_get(recipe, "topology", "interconnect", default="any")),
            "image": image_name,
            "architectures": list(archs or []),
            "gpu_runtime": str(_get(recipe, "topology", "gpu_runtime", default="nvidia")),
            "nodes": int(_get(recipe, "topology", "nodes", default=1)),
            "env": {str(k): str(v) for k, v in dict(_get(recipe, "env", default={})).items()},
            "server_args": [str(a) for a in extra] if isinstance(extra, list | tuple) else [],
        }
    )


def image_architectures(image: str, repo_root: Path | None = None) -> list[str] | None:
    """Architectures listed by images/<image>.yaml, or None when there is no such spec."""
    root = repo_root or Path.cwd()
    spec = root / "images" / f"{image}.yaml"
    if not spec.is_file():
        return None
    try:
        data = yaml.safe_load(spec.read_text()) or {}
    except yaml.YAMLError as err:
        raise ReproError(f"{spec}: not valid YAML: {err}", hint="fix the image spec") from err
    archs = data.get("gpu_architectures", data.get("architectures"))
    if archs is None:
        return None
    if not isinstance(archs, list):
        raise ReproError(f'{spec}: gpu_architectures must be a list like ["9.0", "12.0"]')
    return [str(a) for a in archs]
