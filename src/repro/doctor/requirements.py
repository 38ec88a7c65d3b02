"""What a deployment needs from a machine, in doctor's own terms.

`Requirements` is deliberately small and independent of the recipe schema, so checks can be
written and tested against it alone; `requirements_from_locked` is the one place that knows
how a recipe (and its image spec) spell these needs.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from repro.doctor.arch import normalize_arch
from repro.recipe.hardware import weights_gb as known_weights_gb
from repro.schema.lock import Locked


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
    weights_bytes: int | None = Field(default=None, description="bytes of the model's weights")
    model_repo: str | None = Field(default=None, description="Hub repo of the weights")
    nodes: int = Field(default=1, ge=1)
    env: dict[str, str] = Field(default_factory=dict, description="environment the server gets")
    server_args: list[str] = Field(default_factory=list, description="extra server argv")
    notes: list[str] = Field(
        default_factory=list, description="what could not be read from the recipe, and why"
    )

    @field_validator("architectures", mode="before")
    @classmethod
    def _normalize(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return [normalize_arch(v) for v in value]
        return value

    @property
    def needs_gpus(self) -> bool:
        return self.gpu_runtime == "nvidia" and self.gpus > 0


GB = 1e9


def requirements_from_locked(locked: Locked) -> Requirements:
    """Requirements of a resolved recipe (`repro.lock.load_locked(ref)`).

    GPUs, models, memory, interconnect, nodes and runtime come from `topology`; architectures
    from the image spec `locked` resolved (the lock's own when it has one); weights from
    `model.weights_gb` or the known size of the model; env and extra server args as given.
    A missing image spec is a note (the architecture check then warns), not an error.
    """
    recipe, image = locked.recipe, locked.image_spec
    notes: list[str] = []
    if image is None:
        why = locked.image_error
        notes.append(f"image spec {recipe.image!r}: {getattr(why, 'message', why)}")
    weights_gb = known_weights_gb(recipe.model.repo, recipe.model.weights_gb)
    topo = recipe.topology
    return Requirements(
        source=recipe.name,
        gpus=topo.gpus,
        gpu_models=list(topo.gpu_models),
        min_gpu_memory_gb=topo.min_gpu_memory_gb,
        interconnect=topo.interconnect,
        image=recipe.image,
        architectures=list(image.gpu_architectures) if image is not None else [],
        gpu_runtime="none" if image is not None and image.simulated else topo.gpu_runtime,
        weights_bytes=int(weights_gb * GB) if weights_gb else None,
        model_repo=recipe.model.repo,
        nodes=topo.nodes,
        env=dict(recipe.env),
        server_args=list(recipe.server.extra_args),
        notes=notes,
    )
