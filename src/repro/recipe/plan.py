"""The run plan of a recipe: benchmark sweep, acceptance measurement, simulator settings."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from repro.datasetref import bench_dataset_problem

NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,99}$"


class StrictModel(BaseModel):
    """Strict types (YAML `"8"` is not 8), no unknown keys, no NaN or infinity."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class Bench(StrictModel):
    """The benchmark plan: a closed-loop concurrency sweep."""

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
        "turns); a .jsonl/.json/.csv/.parquet file (relative to the working directory); or a "
        "Hub dataset hf:ORG/NAME[/PATH][@REVISION][:COLUMN], e.g. hf:openai/gsm8k/main:question. "
        "Dataset prompts are sent as they are, chat-formatted; output_len applies to all.",
    )
    prompts_per_level: int = Field(
        64, ge=1, le=1_000_000, description="Requests measured per concurrency level."
    )
    warmup: int = Field(2, ge=0, le=100_000, description="Warmup requests, not measured.")
    repeats: int = Field(1, ge=1, le=100, description="Repeats of each level (for a spread).")
    request_rate: float | None = Field(
        None,
        gt=0,
        le=1_000_000,
        description="Open-loop Poisson arrival rate (req/s); none = closed loop.",
    )

    @field_validator("dataset")
    @classmethod
    def _dataset(cls, value: str) -> str:
        problem = bench_dataset_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("concurrencies")
    @classmethod
    def _levels(cls, value: list[int]) -> list[int]:
        for level in value:
            if level < 1 or level > 100_000:
                raise ValueError("each concurrency is between 1 and 100000")
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
