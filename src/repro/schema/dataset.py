"""The syntax of prompt sources: bench datasets and Hub dataset references.

Kept free of heavy imports so that recipe validation (pydantic) and the bench stage share one
parser.

A Hub dataset reference is `hf:ORG/NAME[/PATH][@REVISION][:COLUMN]`:

- `ORG/NAME`: the dataset repository on the Hub (HF_ENDPOINT, HF_TOKEN apply);
- `/PATH`: a file or folder inside it, to read only those data files (e.g. a config `main`);
- `@REVISION`: a branch, tag or commit SHA (default `main`); may contain `/`
  (`@refs/convert/parquet`); it is resolved to a commit SHA, which the run records;
- `:COLUMN`: the prompt column; default: the first of prompt, text, question, instruction,
  problem (then a ShareGPT `conversations` column).

A `:` always starts the column and `@` always starts the revision, so neither may appear in
the path; a `,` never appears in a reference (lists of prompt sets are comma-separated).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

HF_PREFIX = "hf:"
DATA_SUFFIXES = (".parquet", ".jsonl", ".json", ".csv")
LONGBENCH_V2 = "longbench-v2"  # long real documents (repro.bench.prompts.longdocs)
BENCH_NAMES = ("random", "chat", "sharegpt", LONGBENCH_V2)
# SGLang bench_serving's ShareGPT file (python/sglang/bench_serving.py, SHAREGPT_URL)
SHAREGPT_REPO = "anon8231489123/ShareGPT_Vicuna_unfiltered"
SHAREGPT_FILE = "ShareGPT_V3_unfiltered_cleaned_split.json"
SHAREGPT_REF = f"{HF_PREFIX}{SHAREGPT_REPO}/{SHAREGPT_FILE}"
HF_SYNTAX = "hf:ORG/NAME[/PATH][@REVISION][:COLUMN], e.g. hf:openai/gsm8k/main:question"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_COLUMN = re.compile(r"^[^\s,:@]{1,200}$")


@dataclass(frozen=True)
class HubDatasetRef:
    repo: str
    path: str = ""  # a file or folder inside the repository; "" = the whole repository
    revision: str = "main"
    column: str | None = None

    def pinned(self, commit: str, column: str | None = None) -> str:
        """The same reference with its revision replaced by `commit` (for records, --resume)."""
        path = f"/{self.path}" if self.path else ""
        col = column or self.column
        return f"{HF_PREFIX}{self.repo}{path}@{commit}" + (f":{col}" if col else "")


def hf_ref_problem(ref: str) -> str | None:
    """What is wrong with a `hf:` reference, or None."""
    try:
        parse_hf_ref(ref)
    except ValueError as exc:
        return str(exc)
    return None


def parse_hf_ref(ref: str) -> HubDatasetRef:
    """Parse `hf:ORG/NAME[/PATH][@REVISION][:COLUMN]`; ValueError says what is wrong."""
    if not ref.startswith(HF_PREFIX):
        raise ValueError(f"{ref!r} does not start with {HF_PREFIX!r}")
    rest = ref[len(HF_PREFIX) :]
    column = None
    if ":" in rest:
        rest, column = rest.split(":", 1)
        if not _COLUMN.match(column):
            raise ValueError(
                f"{ref!r}: the column after ':' must be one name without spaces, ':', '@' or ','"
            )
    revision = "main"
    if "@" in rest:
        rest, revision = rest.split("@", 1)
        if not revision or revision.startswith("/") or ".." in revision or "," in revision:
            raise ValueError(f"{ref!r}: the revision after '@' is empty or not a git ref")
    parts = rest.split("/")
    if len(parts) < 2 or not all(_NAME.match(p) for p in parts[:2]):
        raise ValueError(f"{ref!r}: expected {HF_SYNTAX}")
    path = "/".join(parts[2:]).strip("/")
    if ".." in path.split("/") or "," in path:
        raise ValueError(f"{ref!r}: the path inside the repository may not hold '..' or ','")
    return HubDatasetRef(repo="/".join(parts[:2]), path=path, revision=revision, column=column)


def bench_dataset_problem(value: str) -> str | None:
    """What is wrong with a bench dataset value, or None (files are checked when read)."""
    if value in BENCH_NAMES:
        return None
    if value.startswith(HF_PREFIX):
        return hf_ref_problem(value)
    if value.lower().endswith(DATA_SUFFIXES):
        return None
    return (
        f"{value!r} is not a dataset: expected one of {', '.join(BENCH_NAMES)}, a path to a "
        f"{'/'.join(DATA_SUFFIXES)} file, or {HF_SYNTAX}"
    )


class _Source(BaseModel):
    """Exactly which prompts ran; recorded in run.json and accept sets. Lenient (extra keys
    kept) so that records written by older versions still load."""

    model_config = ConfigDict(extra="allow")


class ShippedSource(_Source):
    """A set shipped in repro.bench.prompts/data."""

    kind: Literal["shipped"] = "shipped"
    name: str
    sha256: str = Field(description="of the shipped .jsonl")

    def identity(self) -> str:
        """What makes two runs' prompts the same (compare pairs only equal ones)."""
        return f"shipped sha256:{self.sha256} :"


class FileSource(_Source):
    """A data file given by path."""

    kind: Literal["file"] = "file"
    path: str
    sha256: str = Field(description="of the file when the run started")
    column: str | None = Field(default=None, description="the prompt column read")

    def identity(self) -> str:
        return f"file sha256:{self.sha256} :{self.column or ''}"


class HubSource(_Source):
    """A Hub dataset, pinned to the commit its revision resolved to."""

    kind: Literal["hub"] = "hub"
    ref: str = Field(description="the reference as given")
    endpoint: str | None = None
    repo: str
    revision: str = "main"
    commit: str
    files: list[str] = Field(default_factory=list)
    column: str | None = None
    pinned: str = Field(description="the reference at its commit (what --resume reloads)")
    variant: str | None = Field(default=None, description="how bench samples it (sharegpt)")
    protocol: str | None = Field(default=None, description="a named benchmark set's protocol")
    benchmark_set: str | None = Field(default=None, description="the named set (gsm8k, ...)")

    def identity(self) -> str:
        return f"{self.repo}@{self.commit} {','.join(self.files)} :{self.column}"


PromptSource = Annotated[ShippedSource | FileSource | HubSource, Field(discriminator="kind")]
