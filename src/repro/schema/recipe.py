"""The recipe: one SGLang deployment, as a typed pydantic model.

Field names are snake_case; every field carries a description so that `repro recipe schema`
gives editors useful completion. Models are strict (YAML `"8"` is not the integer 8) and
forbid unknown keys; the recipe stage's loader turns pydantic's errors into one line per
problem, naming file, field path and what was expected, with a "did you mean" for misspelled
keys. Cross-field rules (GPUs needed, DFLASH constraints, ...) live in `repro.recipe.rules`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr, field_validator, model_validator

from repro.schema.base import (
    ENV_NAME_PATTERN,
    NAME_PATTERN,
    Description,
    StrictModel,
)
from repro.schema.buckets import bucket_spec_problem
from repro.schema.conversation import Conversations
from repro.schema.dataset import bench_dataset_problem
from repro.schema.deployment import (
    DrafterSpec,
    ModelSpec,
    Parallelism,
    Server,
    SpeculativeSpec,
    Topology,
)
from repro.schema.level import Load
from repro.schema.slo import SloSearch

# Secrets never live in a recipe: repro forwards them from the environment at launch time.
SECRET_ENV_NAMES = frozenset(
    {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HUGGINGFACE_HUB_TOKEN", "HF_HUB_TOKEN"}
)
_SECRET_SUFFIXES = ("_PASSWORD", "_SECRET", "_API_KEY", "_ACCESS_KEY", "_AUTH_TOKEN")
_HF_TOKEN_VALUE = re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")


MAX_CONCURRENCY = 100_000  # requests in flight at one level
MAX_REQUEST_RATE = 1_000_000.0  # req/s of an open-loop level
MAX_LEVELS = 64  # levels of one sweep
MIN_LEVEL_PROMPTS = 16  # requests a level scaled by prompts_per_concurrency measures at least


class Bench(StrictModel):
    """The benchmark plan: a closed-loop concurrency sweep, an open-loop request-rate ladder
    or a trace replayed at one or more speed-ups."""

    concurrencies: list[int] = Field(
        default_factory=lambda: [1, 2, 4, 8, 16, 32, 64],
        min_length=1,
        max_length=64,
        description="Concurrency levels to sweep, in order.",
    )
    input_len: int = Field(1024, ge=1, le=10_000_000, description="Prompt length in tokens.")
    output_len: int = Field(1024, ge=1, le=10_000_000, description="Output length in tokens.")
    dataset: str = Field(
        "random",
        max_length=500,
        description='"random": random tokens of input_len; "chat": chat-formatted prompts of '
        "input_len (what speculative decoding needs: random tokens make a drafter look "
        'useless); "sharegpt": SGLang bench_serving\'s ShareGPT file from the Hub (first human '
        'turns); "longbench-v2": LongBench-v2\'s long documents; a .jsonl/.json/.csv/.parquet '
        "file (relative to the working directory); or a "
        "Hub dataset hf:ORG/NAME[/PATH][@REVISION][:COLUMN], e.g. hf:openai/gsm8k/main:question. "
        "Dataset prompts are sent as they are, chat-formatted; output_len applies to all.",
    )
    prompts_per_level: int = Field(
        64,
        ge=1,
        le=1_000_000,
        description="Requests measured per level (a trace replay: its first ones); with "
        "prompts_per_concurrency, the most a closed-loop level measures.",
    )
    prompts_per_concurrency: int | None = Field(
        None,
        ge=1,
        le=100_000,
        description="Scale a closed-loop level's requests with its concurrency: a level at c "
        f"measures min(prompts_per_level, max({MIN_LEVEL_PROMPTS}, this x c)), so c=1 costs "
        "a few requests' time, not prompts_per_level of them one after another (InferenceX "
        "measures 10 x c). None: every level measures prompts_per_level.",
    )
    warmup: int = Field(2, ge=0, le=100_000, description="Warmup requests, not measured.")
    repeats: int = Field(1, ge=1, le=100, description="Repeats of each level (for a spread).")
    request_rate: list[float] | None = Field(
        None,
        max_length=MAX_LEVELS,
        description="Open-loop request rates (req/s) to sweep instead of concurrencies, e.g. "
        "[2, 4, 8] (a single number: one rate); none = closed loop.",
    )
    burstiness: float = Field(
        1.0,
        gt=0,
        le=1000,
        description="Arrival burstiness of the rate levels, as bench_serving and vLLM: gamma "
        "gaps of shape burstiness, 1 = Poisson, below 1 burstier, above 1 steadier.",
    )
    max_concurrency: int | None = Field(
        None,
        ge=1,
        le=MAX_CONCURRENCY,
        description="Requests in flight at most in an open-loop level (rates, trace); a "
        "request over the cap waits and is sent late. None: no cap.",
    )
    trace: str | None = Field(
        None,
        max_length=500,
        description="A Mooncake-format trace (JSONL: timestamp ms, input_length, "
        "output_length, hash_ids) replayed at its timestamps: a file, hf:ORG/NAME/FILE, "
        'or "demo" (the small trace repro ships). Prompts share a 512-token block per '
        "shared hash id; input/output lengths come from the trace.",
    )
    trace_speedup: list[float] = Field(
        default_factory=lambda: [1.0],
        min_length=1,
        max_length=MAX_LEVELS,
        description="Trace replay speed-ups to sweep: 2 sends the trace in half its time.",
    )
    length_buckets: str | None = Field(
        None,
        max_length=500,
        description="Context-length buckets in tokens (k: 1024), e.g. 0-8k,8k-32k,32k-: only the "
        "dataset's prompts that fall in one are sent, taken from each bucket in turn, and every "
        "level reports its requests by bucket (of the server's prompt_tokens).",
    )
    conversation: Conversations | None = Field(
        None,
        description="Multi-turn conversations with the history (prefix reuse) instead of single "
        "prompts; prompts_per_level then counts conversations.",
    )
    slo_search: SloSearch | None = Field(
        None,
        description="After the ladder, bisect between the highest level that meets these "
        "latency limits and the lowest that fails, adding up to extra_levels levels.",
    )

    def level_prompts(self, load: Load) -> int:
        """Requests the level at `load` measures (conversations, with `conversation`)."""
        if self.prompts_per_concurrency is None or load.kind != "c":
            return self.prompts_per_level
        scaled = max(MIN_LEVEL_PROMPTS, self.prompts_per_concurrency * int(load.value))
        return min(self.prompts_per_level, scaled)

    @field_validator("request_rate", mode="before")
    @classmethod
    def _one_rate(cls, value: Any) -> Any:
        """A single rate (how recipes and records before rate ladders wrote it) is one level."""
        return [value] if isinstance(value, int | float) and not isinstance(value, bool) else value

    @field_validator("request_rate", "trace_speedup")
    @classmethod
    def _positive_levels(cls, value: list[float] | None) -> list[float] | None:
        for level in value or []:
            if not 0 < level <= MAX_REQUEST_RATE:
                raise ValueError(f"each level is above 0 and at most {MAX_REQUEST_RATE:g}")
        if value is not None and len(set(value)) != len(value):
            raise ValueError("levels must not repeat")
        return value

    @model_validator(mode="after")
    def _one_arrival(self) -> Bench:
        if self.trace is not None and self.request_rate is not None:
            raise ValueError("give request_rate or trace, not both: a trace sets its own times")
        if self.slo_search is not None and (self.trace or self.request_rate):
            raise ValueError(
                "slo_search bisects concurrencies: give it without request_rate or trace"
            )
        return self

    @field_validator("dataset")
    @classmethod
    def _dataset(cls, value: str) -> str:
        problem = bench_dataset_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("length_buckets")
    @classmethod
    def _buckets(cls, value: str | None) -> str | None:
        problem = bucket_spec_problem(value) if value is not None else None
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("concurrencies")
    @classmethod
    def _levels(cls, value: list[int]) -> list[int]:
        for level in value:
            if level < 1 or level > MAX_CONCURRENCY:
                raise ValueError(f"each concurrency is between 1 and {MAX_CONCURRENCY}")
        if len(set(value)) != len(value):
            raise ValueError("concurrency levels must not repeat")
        return value


class Accept(StrictModel):
    """Acceptance-length measurement of the drafter."""

    prompt_sets: list[str] = Field(
        default_factory=lambda: ["math", "code", "chat"],
        min_length=1,
        max_length=64,
        description="Prompt sets shipped with repro (math, code, chat), JSONL files or "
        "hf:datasets.",
    )
    prompts: int = Field(32, ge=1, le=100_000, description="Prompts per set.")
    max_new_tokens: int = Field(512, ge=1, le=1_000_000, description="Tokens generated per prompt.")
    thinking: bool = Field(
        False, description="Render the chat template with thinking on (where it supports it)."
    )
    accuracy: bool = Field(
        False,
        description="Also score the answers (gsm8k-style sets: an answer key) into "
        "accuracy.json, as `repro accept --accuracy`.",
    )

    @field_validator("prompt_sets")
    @classmethod
    def _sets(cls, value: list[str]) -> list[str]:
        for name in value:
            if not name.strip() or len(name) > 500 or "\x00" in name:
                raise ValueError("prompt set names are non-empty and at most 500 characters")
        return value


class Simulator(StrictModel):
    """Settings of the CPU simulator; present only for simulated deployments."""

    profile: str = Field(
        pattern=NAME_PATTERN, description="Timing/acceptance profile of the simulator, e.g. demo."
    )
    load_seconds: float = Field(
        3, ge=0, le=3600, description="Imitated weight-loading time before /health_generate is ok."
    )
    seed: int = Field(0, ge=0, le=2**32 - 1, description="Random seed (deterministic runs).")


class Cost(StrictModel):
    """What the deployment's machine costs, for dollars per million tokens in bench records."""

    gpu_hour_usd: float = Field(
        gt=0,
        le=10_000,
        description="Price of one GPU-hour in US dollars (e.g. a cloud's on-demand rate); "
        "`repro bench --gpu-hour-usd` overrides it.",
    )


class Recipe(StrictModel):
    """One SGLang deployment: model, drafter, speculative settings, parallelism, machine,
    server flags, environment and benchmark plan."""

    name: str = Field(
        pattern=NAME_PATTERN, description="Recipe name; defaults to the file name without .yaml."
    )
    description: Description = Field(
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
    cost: Cost | None = Field(
        None, description="Machine price, for dollars per million output tokens; null: none."
    )

    _source_path: Path | None = PrivateAttr(default=None)
    _chain: list[Path] = PrivateAttr(default_factory=list)
    _origins: dict[Path, dict[str, Any]] = PrivateAttr(default_factory=dict)
    _lines: dict[Path, dict[tuple[str | int, ...], int]] = PrivateAttr(default_factory=dict)
    _recipes_dir: Path | None = PrivateAttr(default=None)

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
