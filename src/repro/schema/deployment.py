"""What a recipe deploys: the model, the drafter, speculative settings, parallelism, the
machine it is meant for, and the server's flags (rendered as SGLang launch_server options)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from repro.schema.base import (
    ALGORITHM_PATTERN,
    HF_REPO_PATTERN,
    PARSER_PATTERN,
    REVISION_PATTERN,
    StrictModel,
)
from repro.schema.forced import ForcedAcceptance


class ModelFacts(StrictModel):
    """What a model's config.json says that a drafter and the parallel sizes must fit; the
    lock reads it at the pinned commit, a recipe may declare it before any lock."""

    architecture: str | None = Field(
        None, max_length=200, description="config.json `architectures[0]`, e.g. Qwen3ForCausalLM."
    )
    vocab_size: int | None = Field(None, ge=1, le=100_000_000, description="`vocab_size`.")
    hidden_size: int | None = Field(None, ge=1, le=1_000_000, description="`hidden_size`.")
    num_attention_heads: int | None = Field(
        None, ge=1, le=100_000, description="`num_attention_heads`: TP must divide it."
    )


class DrafterFacts(StrictModel):
    """What a drafter must share with its target: the target architecture it was trained
    for, and the vocabulary and hidden size (a DFlash or EAGLE drafter reads the target's
    hidden states and shares its embedding and LM head)."""

    target_architecture: str | None = Field(
        None, max_length=200, description="The architecture of the model it drafts for."
    )
    vocab_size: int | None = Field(None, ge=1, le=100_000_000, description="`vocab_size`.")
    hidden_size: int | None = Field(None, ge=1, le=1_000_000, description="`hidden_size`.")


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
    facts: ModelFacts | None = Field(
        None,
        description="The model's config.json facts, checked against the drafter and the parallel "
        "sizes before a lock (the lock reads them from config.json at the pinned commit).",
    )


class DrafterSpec(StrictModel):
    """The draft model of speculative decoding (e.g. a DFlash drafter)."""

    repo: str = Field(pattern=HF_REPO_PATTERN, description="Hugging Face repository id.")
    revision: str = Field(
        "main",
        pattern=REVISION_PATTERN,
        description="Branch, tag or commit SHA; `repro lock` pins it to a commit SHA.",
    )
    weights_gb: float | None = Field(
        None,
        gt=0,
        le=100_000,
        description="Approximate size of the drafter's weights in GB, for the load time a "
        "campaign plan estimates (else the known size of a shipped drafter; declare it in the "
        "file that sets `repo`).",
    )
    facts: DrafterFacts | None = Field(
        None,
        description="What this drafter must share with the model, checked before a lock; "
        "declare them in the file that sets `repo` (facts of another drafter are not used).",
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
    forced_acceptance: ForcedAcceptance | None = Field(
        None,
        description="Force the acceptance length (SGLANG_SIMULATE_ACC_LEN and its method and "
        "token mode in the server's environment), to measure the verify step apart from the "
        "drafter; records and reports label such acceptance forced.",
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
    dp_lm_head: bool = Field(
        False,
        description="With dp_attention: the LM head split over the attention DP group, not the "
        "TP group (--enable-dp-lm-head). SGLang 0.5.23 asks for it when DFLASH runs with DP "
        "attention (srt/arg_groups/speculative_hook.py).",
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
