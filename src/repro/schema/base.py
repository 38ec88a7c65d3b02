"""The vocabulary every declaration shares: name patterns, their wording in error messages,
the strict base model, and a 95% interval."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict

NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,99}$"
HF_REPO_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$"
REVISION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$"
ALGORITHM_PATTERN = r"^[A-Z][A-Z0-9_]{0,63}$"
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
PARSER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
DIGEST_PATTERN = r"^sha256:[0-9a-f]{64}$"
SHA256_PATTERN = r"^[0-9a-f]{64}$"
COMMIT_PATTERN = r"^[0-9a-f]{40}$"
DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"
REPOSITORY_PATTERN = r"^[a-z0-9][a-z0-9._/:-]{0,254}$"
TAG_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$"
# An image reference as Docker parses it (distribution/reference's grammar): optional
# registry host[:port], lowercase path components, optional :tag and @sha256 digest. It never
# starts with '-', so it can never be read as an option of the docker CLI.
_REF_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_REF_HOST = rf"(?:{_REF_LABEL}(?:\.{_REF_LABEL})*(?::[0-9]{{1,5}})?/)"
_REF_PATH = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
IMAGE_REFERENCE_PATTERN = (
    rf"^{_REF_HOST}?{_REF_PATH}(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?"
    r"(?:@sha256:[0-9a-f]{64})?$"
)
PINNED_REFERENCE_PATTERN = rf"^{_REF_HOST}?{_REF_PATH}@sha256:[0-9a-f]{{64}}$"
VERSION_PATTERN = r"^\d+\.\d+(\.\d+)?([.+-][A-Za-z0-9.]+)?$"
PIN_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?==[A-Za-z0-9.+!_-]+$"
OPTION_PATTERN = r"^--[a-z0-9][a-z0-9-]{0,127}$"
PATCH_FILE_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,199}$"
# `\S+` with a max_length beside it, not `\S{1,2000}`: a bounded Unicode class compiles (Rust
# regex, in pydantic-core) into an automaton that cost ~25 ms of every command's start-up.
HTTPS_URL_PATTERN = r"^https://\S+$"

# How each pattern is named in an error message ("expected a Hugging Face repository id...").
PATTERN_WORDS: dict[str, str] = {
    NAME_PATTERN: "a lowercase name (a-z, 0-9, '.', '_', '-')",
    HF_REPO_PATTERN: "a Hugging Face repository id such as org/name",
    REVISION_PATTERN: "a branch, tag or commit SHA",
    ALGORITHM_PATTERN: "an upper-case algorithm name such as DFLASH",
    ENV_NAME_PATTERN: "an environment variable name",
    PARSER_PATTERN: "a name such as kimi_k2",
    DIGEST_PATTERN: "a digest sha256:<64 hex digits>",
    SHA256_PATTERN: "64 lowercase hex digits",
    COMMIT_PATTERN: "a full 40-character commit SHA",
    REPOSITORY_PATTERN: "an image repository such as lmsysorg/sglang",
    TAG_PATTERN: "an image tag",
    IMAGE_REFERENCE_PATTERN: "an image reference such as registry/name:tag",
    PINNED_REFERENCE_PATTERN: "a pinned reference such as registry/name@sha256:<64 hex digits>",
    VERSION_PATTERN: "a version such as 0.5.23",
    PIN_PATTERN: "a pinned requirement such as package==1.2.3",
    OPTION_PATTERN: "an option such as --speculative-ddtree-budget",
    PATCH_FILE_PATTERN: "a file name in patches/<set>/ (no directories)",
    HTTPS_URL_PATTERN: "an https:// URL without spaces",
}


class StrictModel(BaseModel):
    """Strict types (YAML `"8"` is not 8), no unknown keys, no NaN or infinity."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class Interval(BaseModel):
    """A 95% bootstrap interval (percentiles 2.5 and 97.5 of the resampled statistic)."""

    low: float
    high: float


def _stripped(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


# A recipe's or image spec's free text, kept without the newline a YAML block scalar ends in.
Description = Annotated[str, BeforeValidator(_stripped)]
