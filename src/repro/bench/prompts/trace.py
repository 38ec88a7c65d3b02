"""Mooncake-format request traces, and the prompts a replay sends for them.

A trace is JSON lines, one request each: `timestamp` (ms from any origin), `input_length` and
`output_length` (tokens) and `hash_ids`, one id per 512-token block of the prompt: two
requests that name the same id share that block, so their prompts share a prefix the server
can cache (Mooncake's FAST'25 traces, github.com/kvcache-ai/Mooncake FAST25-release; SGLang
0.5.23 replays them in benchmark/datasets/mooncake.py and benchmark/serving.py
`get_request` with `--use-trace-timestamps`). Here a block id always becomes the same
`BLOCK_TOKENS` token ids (drawn from a generator seeded by the id), so equal ids give equal
token prefixes; the rest of a prompt beyond its blocks is tokens of its own. /generate gets
the token ids (`input_ids`, exact lengths); the chat endpoint gets one word per token id (the
same ids give the same words, so shared blocks stay shared prefixes; lengths then depend on
the server's tokenizer).

Where a trace comes from: `demo` (the small trace repro ships, made by
scripts/make_demo_trace.py), a file, or a Hub dataset file (`hf:ORG/NAME/FILE.jsonl`,
pinned to its commit like any Hub dataset).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import msgspec
import numpy as np

from repro import fileread
from repro.bench.prompts.datasets import fetch_hub_files, sha256_file
from repro.errors import ReproError
from repro.schema.dataset import HF_PREFIX, FileSource, HubSource, PromptSource, ShippedSource

BLOCK_TOKENS = 512
"""Tokens per hash id, as Mooncake's traces count them."""
DEMO_TRACE = "demo"
DEMO_FILE = "trace-demo.jsonl"
TOKEN_IDS = (256, 1000)
"""Synthetic token ids are drawn from [256, 1000): past a byte-level tokenizer's byte
alphabet, and inside the smallest vocabulary repro serves (the CPU engine's tiny model, 1024)."""
MAX_LENGTH = 10_000_000
MAX_TRACE_LINES = 1_000_000
"""Lines of a trace read at most (a level replays at most prompts_per_level requests, at most
a million): a trace is read line by line, and only as far as the requests a replay needs."""
MAX_HASH_IDS = 100_000
_OWN_TOKENS_SALT = 0x5EED_0000_0000  # seeds a request's own tokens apart from any block id
_LINE_HINT = (
    'each line is {"timestamp": MS, "input_length": TOKENS, "output_length": TOKENS, '
    '"hash_ids": [ID, ...]}'
)


class _Line(msgspec.Struct, forbid_unknown_fields=False):
    timestamp: float
    input_length: int
    output_length: int
    hash_ids: list[int] = []


@dataclass(frozen=True)
class TraceRequest:
    timestamp_ms: float
    input_length: int
    output_length: int
    hash_ids: tuple[int, ...]


@dataclass
class Trace:
    """A trace's requests in timestamp order, and where it came from (for the record)."""

    name: str
    requests: list[TraceRequest]
    source: PromptSource

    def first(self, n: int) -> list[TraceRequest]:
        """The first `n` requests (a level replays at most its prompts_per_level)."""
        return self.requests[:n]


def _request(raw: bytes, where: str) -> TraceRequest:
    try:
        line = msgspec.json.decode(raw, type=_Line)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise ReproError(f"{where}: not a Mooncake trace line: {exc}", hint=_LINE_HINT) from None
    problem = None
    if not 0 <= line.timestamp < float("inf"):
        problem = f"timestamp {line.timestamp} is not a time in ms at or after 0"
    elif not 1 <= line.input_length <= MAX_LENGTH or not 1 <= line.output_length <= MAX_LENGTH:
        problem = f"input_length and output_length are between 1 and {MAX_LENGTH}"
    elif len(line.hash_ids) > MAX_HASH_IDS or any(h < 0 for h in line.hash_ids):
        problem = f"hash_ids are at most {MAX_HASH_IDS} ids of 0 or more"
    if problem:
        raise ReproError(f"{where}: {problem}", hint=_LINE_HINT)
    return TraceRequest(line.timestamp, line.input_length, line.output_length, tuple(line.hash_ids))


def parse_trace(text: str, where: str, limit: int = MAX_TRACE_LINES) -> list[TraceRequest]:
    """The first `limit` requests of a trace's text (see `read_trace`)."""
    lines = (line.encode() for line in text.splitlines())
    return read_trace(enumerate(lines, start=1), where, limit)


def read_trace(
    lines: Iterable[tuple[int, bytes]], where: str, limit: int = MAX_TRACE_LINES
) -> list[TraceRequest]:
    """The trace's first `limit` requests in file order (as SGLang's bench_serving takes a
    trace's first requests), sorted by timestamp (stable: ties keep file order). Lines are
    read only until `limit` requests are found, and never more than MAX_TRACE_LINES."""
    requests: list[TraceRequest] = []
    wanted = min(limit, MAX_TRACE_LINES)
    for number, line in lines:
        if len(requests) >= wanted or number > MAX_TRACE_LINES:
            break
        if line.strip():
            requests.append(_request(line, f"{where}:{number}"))
    if not requests:
        raise ReproError(f"{where}: the trace has no requests", hint=_LINE_HINT)
    return sorted(requests, key=lambda r: r.timestamp_ms)


def load_trace(
    ref: str,
    *,
    limit: int = MAX_TRACE_LINES,
    endpoint: str | None = None,
    cache_dir: Path | None = None,
) -> Trace:
    """The first `limit` requests of the trace `ref` names: `demo`, a file, or
    `hf:ORG/NAME/FILE.jsonl` (pinned)."""
    source: PromptSource
    if ref == DEMO_TRACE:
        text = resources.files("repro.bench.prompts").joinpath("data", DEMO_FILE).read_text()
        digest = hashlib.sha256(text.encode()).hexdigest()
        shipped = ShippedSource(name=ref, sha256=digest)
        return Trace(ref, parse_trace(text, DEMO_FILE, limit), shipped)
    if ref.startswith(HF_PREFIX):
        got = fetch_hub_files(ref, endpoint=endpoint, cache_dir=cache_dir)
        if len(got.files) != 1:
            raise ReproError(
                f"{got.where}: a trace is one file, found {len(got.files)}",
                hint="name the file: hf:ORG/NAME/PATH/trace.jsonl",
            )
        [file] = got.files
        from repro.hub.errors import endpoint_url  # deferred: repro.hub loads for Hub refs

        source = HubSource(
            ref=ref, endpoint=endpoint_url(endpoint), repo=got.hub.repo,
            revision=got.hub.revision, commit=got.commit, files=got.files,
            pinned=got.hub.pinned(got.commit, None),
        )  # fmt: skip
        where = f"{got.where}/{file}"
        lines = fileread.iter_lines(got.snapshot / file, where)
        return Trace(ref, read_trace(lines, where, limit), source)
    path = Path(ref)
    if not path.is_file():
        raise ReproError(
            f"trace {ref!r} is not a file",
            hint=f"give a Mooncake JSONL file, {HF_PREFIX}ORG/NAME/FILE.jsonl, or {DEMO_TRACE}",
        )
    source = FileSource(path=str(path), sha256=sha256_file(fileread.named_file(path)))
    lines = fileread.iter_lines(path)
    return Trace(ref, read_trace(lines, str(path), limit), source)


def _tokens(seed: int, n: int) -> list[int]:
    low, high = TOKEN_IDS
    return [int(t) for t in np.random.default_rng(seed).integers(low, high, n)]


def trace_tokens(request: TraceRequest, index: int) -> list[int]:
    """The prompt's token ids: each hash id's block, then tokens of the request's own (seeded
    by its `index` in the trace), `input_length` in all."""
    ids: list[int] = []
    for block in request.hash_ids:
        if len(ids) >= request.input_length:
            break
        ids += _tokens(block, BLOCK_TOKENS)
    missing = request.input_length - len(ids)
    if missing > 0:
        ids += _tokens(_OWN_TOKENS_SALT + index, missing)
    return ids[: request.input_length]


def _word(token: int) -> str:
    """One lower-case word per token id, the same for the same id."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    first, rest = divmod(token, 26)
    return letters[rest] + letters[first % 26] + letters[(first // 26) % 26]


def trace_text(request: TraceRequest, index: int) -> str:
    """The prompt as words, for the chat endpoint (one word per token id)."""
    return " ".join(_word(t) for t in trace_tokens(request, index))
