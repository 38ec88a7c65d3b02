"""The recipe: one SGLang deployment, as a typed pydantic model.

Field names are snake_case; every field carries a description so that `repro recipe schema`
gives editors useful completion. Models are strict (YAML `"8"` is not the integer 8) and
forbid unknown keys; the loader turns pydantic's errors into one line per problem, naming
file, field path and what was expected, with a "did you mean" for misspelled keys.

Cross-field rules (GPUs needed, DFLASH constraints, ...) live in `repro.recipe.rules`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PrivateAttr, field_validator

from repro.recipe.plan import NAME_PATTERN, Accept, Bench, Simulator, StrictModel
from repro.recipe.yamlio import PATTERN_WORDS

HF_REPO_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$"
REVISION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$"
ALGORITHM_PATTERN = r"^[A-Z][A-Z0-9_]{0,63}$"
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
PARSER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"

PATTERN_WORDS.update(
    {
        NAME_PATTERN: "a lowercase name (a-z, 0-9, '.', '_', '-')",
        HF_REPO_PATTERN: "a Hugging Face repository id such as org/name",
        REVISION_PATTERN: "a branch, tag or commit SHA",
        ALGORITHM_PATTERN: "an upper-case algorithm name such as DFLASH",
        ENV_NAME_PATTERN: "an environment variable name",
        PARSER_PATTERN: "a name such as kimi_k2",
    }
)

# Secrets never live in a recipe: repro forwards them from the environment at launch time.
SECRET_ENV_NAMES = frozenset(
    {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HUGGINGFACE_HUB_TOKEN", "HF_HUB_TOKEN"}
)
_SECRET_SUFFIXES = ("_PASSWORD", "_SECRET", "_API_KEY", "_ACCESS_KEY", "_AUTH_TOKEN")
_HF_TOKEN_VALUE = re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")


class ModelSpec(StrictModel):
    """The served (target) model."""

    repo: str = Field(
        pattern=HF_REPO_PATTERN,
        description="Hugging Face repository id of the model, e.g. moonshotai/Kimi-K2.6.",
    )
    revision: str = Field(
        "main",
        pattern=REVISION_PATTERN,
        description="Branch, tag or commit SHA; `repro lock` pins it to a commit SHA.",
    )
    trust_remote_code: bool = Field(
        False, description="Pass --trust-remote-code (models with custom modelling code)."
    )
    served_model_name: str | None = Field(
        None, max_length=200, description="Name the OpenAI API reports (--served-model-name)."
    )
    weights_gb: float | None = Field(
        None,
        gt=0,
        le=100_000,
        description="Approximate size of the weights in GB, for the GPU-memory check before any "
        "download (the lock records the exact bytes).",
    )


class DrafterSpec(StrictModel):
    """The draft model of speculative decoding (e.g. a DFlash drafter)."""

    repo: str = Field(pattern=HF_REPO_PATTERN, description="Hugging Face repository id.")
    revision: str = Field(
        "main",
        pattern=REVISION_PATTERN,
        description="Branch, tag or commit SHA; `repro lock` pins it to a commit SHA.",
    )


class SpeculativeSpec(StrictModel):
    """Speculative decoding settings (rendered as --speculative-* options)."""

    algorithm: str = Field(
        pattern=ALGORITHM_PATTERN,
        description="Speculative algorithm as SGLang registers it: DFLASH, EAGLE, EAGLE3, "
        "STANDALONE, NGRAM, ... or one a patch set provides (DDTREE).",
    )
    num_draft_tokens: int | None = Field(
        None,
        ge=1,
        le=1024,
        description="--speculative-num-draft-tokens; for DFLASH it defaults to the drafter's "
        "block_size.",
    )
    block_size: int | None = Field(
        None,
        ge=1,
        le=1024,
        description="DFLASH block size (--speculative-dflash-block-size); must agree with "
        "num_draft_tokens when both are set.",
    )
    ddtree_budget: int | None = Field(
        None,
        ge=1,
        le=4096,
        description="DDTREE tree budget (--speculative-ddtree-budget): budget + 1 tokens are "
        "verified per step.",
    )
    draft_window_size: int | None = Field(
        None,
        ge=1,
        le=100_000_000,
        description="--speculative-draft-window-size: drafter attention window for long contexts.",
    )
    draft_attention_backend: str | None = Field(
        None,
        pattern=PARSER_PATTERN,
        description="--speculative-draft-attention-backend.",
    )
    num_steps: int | None = Field(
        None, ge=1, le=1024, description="--speculative-num-steps (EAGLE-style algorithms)."
    )
    eagle_topk: int | None = Field(
        None, ge=1, le=1024, description="--speculative-eagle-topk (EAGLE-style algorithms)."
    )


class Parallelism(StrictModel):
    """How the model is split over GPUs (SGLang semantics)."""

    tp: int = Field(1, ge=1, le=1024, description="Tensor-parallel size (--tp-size).")
    ep: int = Field(
        1,
        ge=1,
        le=1024,
        description="Expert-parallel size of the MoE layers (--ep-size). It splits the TP group "
        "(MoE TP = tp / ep), it does not add GPUs; must divide tp.",
    )
    pp: int = Field(1, ge=1, le=1024, description="Pipeline-parallel size (--pp-size).")
    dp: int = Field(
        1,
        ge=1,
        le=1024,
        description="Data-parallel size. Without dp_attention: dp full replicas of tp x pp GPUs "
        "each (--dp-size). With dp_attention: the attention DP width inside the TP group "
        "(--attn-dp-size), no extra GPUs.",
    )
    dp_attention: bool = Field(
        False,
        description="Data-parallel attention inside the TP group (rendered as --attn-dp-size dp, "
        "or --dp-size dp --enable-dp-attention on catalogs without --attn-dp-size).",
    )

    @property
    def replica_gpus(self) -> int:
        """GPUs one model replica occupies (tp x pp)."""
        return self.tp * self.pp

    @property
    def gpus_needed(self) -> int:
        """GPUs needed: tp x pp, times dp when dp replicas do not share the TP group."""
        return self.replica_gpus * (1 if self.dp_attention else self.dp)


class Topology(StrictModel):
    """The machine(s) the recipe is meant for; `repro doctor` checks them."""

    gpus: int = Field(
        ge=0, le=4096, description="GPUs per node the deployment uses (0 for the simulator)."
    )
    gpu_models: list[str] = Field(
        default_factory=list,
        description='Acceptable GPU models, e.g. ["RTX PRO 6000"] or ["B200"]; empty = any.',
    )
    interconnect: Literal["pcie", "nvlink", "any"] = Field(
        "any", description="GPU interconnect the recipe was tuned for."
    )
    min_gpu_memory_gb: float | None = Field(
        None, gt=0, le=10_000, description="Minimum memory per GPU in GB."
    )
    nodes: int = Field(1, ge=1, le=1024, description="Number of nodes (--nnodes when > 1).")
    gpu_runtime: Literal["nvidia", "none"] = Field(
        "nvidia",
        description='"nvidia": the compose service reserves GPUs. "none": it reserves no GPU '
        "(required for the simulator); never implied.",
    )

    @field_validator("gpu_models")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not name.strip() or len(name) > 100:
                raise ValueError("GPU model names are non-empty and at most 100 characters")
        return value


class Server(StrictModel):
    """SGLang server settings (rendered as options of sglang.launch_server)."""

    host: str = Field(
        "0.0.0.0", pattern=r"^[A-Za-z0-9.:_-]{1,253}$", description="--host inside the container."
    )
    port: int = Field(30000, ge=1, le=65535, description="--port.")
    mem_fraction_static: float | None = Field(
        None, gt=0, le=1, description="--mem-fraction-static (weights + KV cache share)."
    )
    cuda_graph: bool = Field(
        True,
        description="CUDA graphs on (default) or off (rendered as --cuda-graph-backend-decode/"
        "prefill disabled, or --disable-cuda-graph on older catalogs).",
    )
    cuda_graph_max_bs: int | None = Field(
        None, ge=1, le=65_536, description="Largest decode batch captured in a CUDA graph."
    )
    context_length: int | None = Field(None, ge=1, le=100_000_000, description="--context-length.")
    max_running_requests: int | None = Field(
        None, ge=1, le=1_000_000, description="--max-running-requests."
    )
    tool_call_parser: str | None = Field(
        None, pattern=PARSER_PATTERN, description="--tool-call-parser, e.g. kimi_k2."
    )
    reasoning_parser: str | None = Field(
        None, pattern=PARSER_PATTERN, description="--reasoning-parser, e.g. kimi_k2."
    )
    enable_metrics: bool = Field(
        True, description="--enable-metrics (Prometheus /metrics, read by the benchmark)."
    )
    extra_args: list[str] = Field(
        default_factory=list,
        max_length=512,
        description="More launch_server options, one token per item "
        '(["--chunked-prefill-size", "8192"]); checked against the image\'s option catalog.',
    )

    @field_validator("extra_args")
    @classmethod
    def _printable(cls, value: list[str]) -> list[str]:
        for token in value:
            if "\x00" in token or len(token) > 4096:
                raise ValueError("argv tokens hold no NUL byte and are at most 4096 characters")
        return value


class Recipe(StrictModel):
    """One SGLang deployment: model, drafter, speculative settings, parallelism, machine,
    server flags, environment and benchmark plan."""

    name: str = Field(
        pattern=NAME_PATTERN, description="Recipe name; defaults to the file name without .yaml."
    )
    description: str = Field(
        "", max_length=10_000, description="What this deployment is and why (not inherited)."
    )
    extends: str | None = Field(
        None,
        max_length=500,
        description="Parent recipe (a name in the same directory, or a relative path). "
        "Mappings merge, lists and scalars replace.",
    )
    image: str = Field(pattern=NAME_PATTERN, description="Image spec name: images/<image>.yaml.")
    model: ModelSpec = Field(description="The served model.")
    drafter: DrafterSpec | None = Field(None, description="Draft model, or null for none.")
    speculative: SpeculativeSpec | None = Field(
        None, description="Speculative decoding, or null for autoregressive decoding."
    )
    parallelism: Parallelism = Field(
        default_factory=lambda: Parallelism.model_validate({}), description="TP/EP/PP/DP."
    )
    topology: Topology = Field(description="GPUs, GPU models, interconnect, nodes.")
    server: Server = Field(
        default_factory=lambda: Server.model_validate({}), description="Server flags."
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Environment of the server process. Secrets (HF_TOKEN) are refused: repro "
        "forwards them from your environment at launch.",
    )
    bench: Bench = Field(
        default_factory=lambda: Bench.model_validate({}), description="Benchmark plan."
    )
    accept: Accept | None = Field(None, description="Acceptance-length measurement plan.")
    simulator: Simulator | None = Field(
        None, description="Simulator settings (only for an image with simulated: true)."
    )

    _source_path: Path | None = PrivateAttr(default=None)
    _chain: list[Path] = PrivateAttr(default_factory=list)
    _origins: dict[Path, dict[str, Any]] = PrivateAttr(default_factory=dict)
    _lines: dict[Path, dict[tuple[str | int, ...], int]] = PrivateAttr(default_factory=dict)
    _recipes_dir: Path | None = PrivateAttr(default=None)

    @field_validator("description", mode="before")
    @classmethod
    def _strip(cls, value: Any) -> Any:
        return value.strip() if isinstance(value, str) else value

    @field_validator("env", mode="before")
    @classmethod
    def _numbers_as_text(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: (str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v)
                for k, v in value.items()
            }
        return value

    @field_validator("env")
    @classmethod
    def _no_secrets(cls, value: dict[str, str]) -> dict[str, str]:
        for key, text in value.items():
            if not re.match(ENV_NAME_PATTERN, key):
                raise ValueError(f"{key!r} is not an environment variable name")
            if key in SECRET_ENV_NAMES or key.upper().endswith(_SECRET_SUFFIXES):
                raise ValueError(
                    f"{key} is a secret and never goes in a recipe; repro forwards it from your "
                    "environment at launch"
                )
            if _HF_TOKEN_VALUE.search(text):
                raise ValueError(f"{key} holds what looks like a Hugging Face token; remove it")
            if "\x00" in text or len(text) > 65_536:
                raise ValueError(f"{key}: values hold no NUL byte and are at most 64 KiB")
        return value

    # --- where it came from --------------------------------------------------------------
    @property
    def source_path(self) -> Path | None:
        """The file this recipe was loaded from (the child-most file, or the lock file)."""
        return self._source_path

    @property
    def chain(self) -> list[Path]:
        """Files this recipe was merged from, child first (just the file without extends)."""
        return list(self._chain)

    @property
    def recipes_dir(self) -> Path | None:
        return self._recipes_dir

    def resolved(self) -> dict[str, Any]:
        """The fully resolved recipe as JSON-able data (what a lock stores under `recipe`)."""
        data = self.model_dump(mode="json")
        data["extends"] = None
        return data
