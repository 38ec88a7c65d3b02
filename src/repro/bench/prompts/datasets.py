"""Prompt sets from data files and Hub datasets, with the provenance a run records.

Files: `.jsonl` (one JSON object or string a line), `.json` (a list of objects or strings,
or JSON lines), `.csv` (a header row) and `.parquet` (read with pyarrow). The prompt column
is the one named, else the first of PROMPT_COLUMNS present, else a conversation column
(CONVERSATION_COLUMNS); a conversation (ShareGPT `[{"from": "human", "value": ...}, ...]` or
OpenAI `[{"role": "user", "content": ...}]`) gives its first human turn, as SGLang
bench_serving's `sample_sharegpt_requests` does (python/sglang/bench_serving.py). Rows that
are plain strings are prompts as they are; empty prompts are dropped.

Hub datasets (`hf:ORG/NAME[/PATH][@REVISION][:COLUMN]`, see repro.schema.dataset): the revision
is resolved to its commit SHA first and every file is downloaded at that SHA into the Hub
cache (HF_HUB_CACHE; later runs reuse it, and with HF_HUB_OFFLINE=1 a cached reference
resolves from the cache alone). Data files: those under PATH with a DATA_SUFFIXES suffix; of
them the `test` split if any file's name or folder is `test` (e.g. data/test-00000.parquet),
else the `train` split, else all; then only the first format of parquet, jsonl, json, csv
present (a repo often carries one split in two formats); in path order.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro import fileread
from repro.errors import ReproError
from repro.safetext import shown_names
from repro.schema.dataset import (
    DATA_SUFFIXES,
    HF_SYNTAX,
    FileSource,
    HubDatasetRef,
    HubSource,
    PromptSource,
    parse_hf_ref,
)

PROMPT_COLUMNS = ("prompt", "text", "question", "instruction", "problem")
CONVERSATION_COLUMNS = ("conversations", "conversation", "messages")
SPLITS = ("test", "train")
_METADATA = {"dataset_info.json", "dataset_infos.json", "dataset_dict.json", "state.json"}
_MISSING = object()


@dataclass
class PromptSet:
    name: str
    prompts: list[str]
    source: PromptSource  # provenance, for the run record
    fit_to_length: bool = False  # synthetic prompts that bench pads to input_len
    # the human turns of each row whose column held a conversation (multi-turn bench levels)
    dialogues: list[list[str]] = field(default_factory=list)
    answers: list[str] | None = None  # the key's final numbers, per prompt (prompts.answers)


# ---- reading files --------------------------------------------------------------------------

Table = tuple[list[str], Callable[[str], list[Any]]]  # columns, and a column's values per row


def _rows_json(text: str, where: str, lines: bool) -> list[Any]:
    if not lines:
        try:
            doc = _bounded(json.loads(text), where)
        except json.JSONDecodeError as exc:
            if exc.msg != "Extra data":  # several documents: JSON lines in a .json file
                raise ReproError(f"{where}: not JSON ({exc.msg}, line {exc.lineno})") from None
        except RecursionError:
            raise fileread.UnreadableFile(f"{where}: nested too deep to be rows") from None
        else:
            if not isinstance(doc, list):
                raise ReproError(
                    f"{where}: expected a JSON list of rows, found {type(doc).__name__}",
                    hint="a .json file holds a list of objects (or strings), or one per line",
                )
            return doc
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append(_bounded(json.loads(line), f"{where}:{n}"))
            except json.JSONDecodeError as exc:
                raise ReproError(f"{where}:{n}: not JSON ({exc.msg})") from None
            except RecursionError:
                raise fileread.UnreadableFile(f"{where}:{n}: nested too deep to be a row") from None
    return rows


def _bounded(value: Any, where: str) -> Any:
    """A parsed row or document, refused when nested deeper than a dataset can be."""
    if fileread.depth_of(value, fileread.MAX_DEPTH) > fileread.MAX_DEPTH:
        raise fileread.UnreadableFile(f"{where}: nested deeper than {fileread.MAX_DEPTH} levels")
    return value


def _rows_table(rows: list[Any], where: str) -> Table:
    for n, row in enumerate(rows, 1):
        if not isinstance(row, dict | str):
            raise ReproError(
                f"{where}: row {n} is a JSON {type(row).__name__}",
                hint="each row is an object with a prompt column, or a string",
            )
    columns = list(dict.fromkeys(k for row in rows if isinstance(row, dict) for k in row))
    return columns, lambda col: [r if isinstance(r, str) else r.get(col, _MISSING) for r in rows]


def _parquet_table(path: Path, where: str) -> Table:
    # deferred: pyarrow is heavy and only parquet prompt files need it
    import pyarrow
    import pyarrow.parquet as pq

    fileread.regular_file(path, where)  # a FIFO would block pyarrow's open
    try:
        names = pq.read_schema(path).names
    except (pyarrow.ArrowException, OSError) as exc:
        raise ReproError(f"{where}: not a parquet file ({exc})") from None

    def column(name: str) -> list[Any]:
        try:
            values: list[Any] = pq.read_table(path, columns=[name]).column(name).to_pylist()
        except (pyarrow.ArrowException, OSError) as exc:  # a corrupt page or chunk
            raise ReproError(
                f"{where}: corrupt parquet data in column {name!r} ({exc})",
                hint="download or write the file again",
            ) from None
        return values

    return names, column


def text_table(text: str, suffix: str, where: str) -> Table:
    if suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        rows = list(reader)
        return list(reader.fieldnames or []), lambda col: [r.get(col, _MISSING) for r in rows]
    return _rows_table(_rows_json(text, where, lines=suffix == ".jsonl"), where)


def file_table(path: Path, where: str) -> Table:
    suffix = path.suffix.lower()
    if suffix not in DATA_SUFFIXES:
        raise ReproError(
            f"{where}: unsupported file type {suffix or '(none)'!r}",
            hint=f"prompt files are {', '.join(DATA_SUFFIXES)}",
        )
    if suffix == ".parquet":
        return _parquet_table(path, where)
    return text_table(fileread.read_text(path, where), suffix, where)


def first_human_turn(turns: list[Any]) -> str | None:
    """The first user turn of a ShareGPT or OpenAI-style conversation, or of a list of user
    turns as text (mt_bench_prompts' `prompt`: the first turn, as z-lab's benchmark sends)."""
    if turns and isinstance(turns[0], str):
        return turns[0]
    for turn in turns:
        if not isinstance(turn, dict):
            continue
        if turn.get("from") in ("human", "user") or turn.get("role") == "user":
            text = turn.get("value", turn.get("content"))
            return text if isinstance(text, str) else None
    return None


def human_turns(turns: list[Any]) -> list[str]:
    """Every user turn of a conversation (ShareGPT, OpenAI-style, or a list of texts), in
    order: what a multi-turn level sends, one after the other."""
    out = []
    for turn in turns:
        text = turn if isinstance(turn, str) else None
        if isinstance(turn, dict) and (
            turn.get("from") in ("human", "user") or turn.get("role") == "user"
        ):
            text = turn.get("value", turn.get("content"))
        if isinstance(text, str) and text.strip():
            out.append(text)
    return out


def read_dialogues(tables: list[tuple[str, Table]], column: str) -> list[list[str]]:
    """The user turns of each row whose `column` holds a conversation (none for text)."""
    out = []
    for _, (cols, values) in tables:
        if cols and column not in cols:
            continue
        out += [human_turns(v) for v in values(column) if isinstance(v, list)]
    return [turns for turns in out if turns]


def choose_column(columns: list[str], wanted: str | None, where: str, hint: str) -> str:
    """The prompt column: `wanted`, else the first known one; a ReproError lists the columns."""
    if not columns:  # rows are plain strings
        return wanted or ""
    if wanted in columns:
        return wanted
    found = next((c for c in PROMPT_COLUMNS + CONVERSATION_COLUMNS if c in columns), None)
    if found and not wanted:
        return found
    what = f"no column {wanted!r}" if wanted else "no prompt column"
    raise ReproError(f"{where}: {what}; its columns are: {shown_names(columns)}", hint=hint)


def column_prompts(values: list[Any], column: str, where: str) -> list[str]:
    out = []
    for n, value in enumerate(values, 1):
        if value is _MISSING:
            raise ReproError(f"{where}: row {n} has no {column!r}", hint="give every row one")
        text = first_human_turn(value) if isinstance(value, list) else value
        if text is not None and not isinstance(text, str):
            raise ReproError(
                f"{where}: row {n}: {column!r} holds a {type(text).__name__}, not text",
                hint="name a text column (or a ShareGPT conversation column)",
            )
        if text and text.strip():
            out.append(text)
    return out


def read_prompts(
    label: str, tables: list[tuple[str, Table]], column: str | None, hint: str
) -> tuple[list[str], str]:
    """Prompts of one or more files (`(where, table)`), with the column they came from."""
    union = list(dict.fromkeys(c for _, (cols, _) in tables for c in cols))
    chosen = choose_column(union, column, label, hint)
    prompts: list[str] = []
    for where, (cols, values) in tables:
        if cols and chosen not in cols:
            choose_column(cols, chosen, where, hint)  # raises, naming this file's columns
        prompts += column_prompts(values(chosen), chosen, where)
    return prompts, chosen


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def load_file(path: Path) -> PromptSet:
    """A prompt set from a local data file, recorded by path and sha256."""
    hint = f"give each row one of the columns {', '.join(PROMPT_COLUMNS)}"
    tables = [(str(path), file_table(fileread.named_file(path), str(path)))]
    prompts, column = read_prompts(str(path), tables, None, hint)
    source = FileSource(path=str(path), sha256=sha256_file(path), column=column)
    return PromptSet(path.stem, prompts, source, dialogues=read_dialogues(tables, column))


# ---- Hub datasets ---------------------------------------------------------------------------


def _split_of(path: str) -> str | None:
    words = set(re.split(r"[^a-z0-9]+", path.lower()))
    return next((s for s in SPLITS if s in words), None)


def pick_data_files(paths: list[str], sub: str = "") -> list[str]:
    """The data files to read from a dataset repository's file list (rule in the docstring)."""
    inside = [p for p in paths if not sub or p == sub or p.startswith(sub.rstrip("/") + "/")]
    data = sorted(
        p
        for p in inside
        if p.lower().endswith(DATA_SUFFIXES)
        and p.rsplit("/", 1)[-1] not in _METADATA
        and not any(part.startswith(".") for part in p.split("/"))
    )
    for split in SPLITS:
        if any(_split_of(p) == split for p in data):
            data = [p for p in data if _split_of(p) == split]
            break
    suffix = next((s for s in DATA_SUFFIXES if any(p.lower().endswith(s) for p in data)), None)
    return [p for p in data if suffix and p.lower().endswith(suffix)]


def _storage(ref: HubDatasetRef, cache: Path) -> Path:
    # deferred (as below): huggingface_hub and repro.hub load only for Hub datasets
    from repro.hub.cache import storage_dir

    return storage_dir(cache, ref.repo, "dataset")


def _cached_snapshot(ref: HubDatasetRef, cache: Path) -> tuple[str, list[str]] | None:
    storage = _storage(ref, cache)
    pointer = storage / "refs" / ref.revision
    commit = pointer.read_text().strip() if pointer.is_file() else ref.revision
    snap = storage / "snapshots" / commit
    if not snap.is_dir():
        return None
    return commit, sorted(p.relative_to(snap).as_posix() for p in snap.rglob("*") if p.is_file())


def _remember_ref(ref: HubDatasetRef, commit: str, cache: Path) -> None:
    """Record `revision -> commit` in the cache's refs/ (as huggingface_hub does for a branch
    download), since files are downloaded by SHA: an offline run finds the branch again."""
    if ref.revision == commit:
        return
    pointer = _storage(ref, cache) / "refs" / ref.revision
    pointer.parent.mkdir(parents=True, exist_ok=True)
    pointer.write_text(commit)


@dataclass
class HubFiles:
    """A Hub dataset reference's data files, downloaded at one commit into `snapshot`."""

    hub: HubDatasetRef
    commit: str
    files: list[str]
    snapshot: Path
    where: str  # hf:ORG/NAME[/PATH]@COMMIT, for messages


def fetch_hub_files(
    ref: str, *, endpoint: str | None = None, cache_dir: Path | None = None
) -> HubFiles:
    """The data files `ref` names, pinned to a commit SHA (see the module docstring)."""
    try:
        hub = parse_hf_ref(ref)
    except ValueError as exc:
        raise ReproError(str(exc), hint=f"the syntax is {HF_SYNTAX}") from None
    # deferred: huggingface_hub (and repro.hub, built on it) load only for Hub datasets
    from huggingface_hub import HfApi, constants, hf_hub_download

    from repro.hub.cache import SpaceMargin, cache_root, check_space
    from repro.hub.errors import HubError, hub_errors

    cache = cache_root(cache_dir)
    offline = constants.HF_HUB_OFFLINE
    if offline:
        cached = _cached_snapshot(hub, cache)
        if cached is None:
            raise HubError(
                f"HF_HUB_OFFLINE is set and {ref} is not in the Hub cache ({cache})",
                hint="run once with the Hub reachable (the files are cached), or unset "
                "HF_HUB_OFFLINE",
            )
        commit, paths = cached
        sizes: dict[str, int] = {}
    else:
        with hub_errors(hub.repo, hub.revision, endpoint, "dataset"):
            info = HfApi(endpoint=endpoint).dataset_info(
                hub.repo, revision=hub.revision, files_metadata=True
            )
        if not info.sha:
            raise HubError(f"the Hub gave no commit SHA for dataset {hub.repo}@{hub.revision}")
        commit = info.sha
        sizes = {s.rfilename: s.size or 0 for s in info.siblings or []}
        paths = sorted(sizes)
    where = f"hf:{hub.repo}" + (f"/{hub.path}" if hub.path else "") + f"@{commit[:12]}"
    files = pick_data_files(paths, hub.path)
    if not files:
        raise ReproError(
            f"{where} has no data files ({', '.join(DATA_SUFFIXES)})"
            + (f" under {hub.path!r}" if hub.path else "")
            + f"; its files: {', '.join(paths[:20]) or 'none'}",
            hint=f"name a folder or file with data: {HF_SYNTAX}",
        )
    snapshot = _storage(hub, cache) / "snapshots" / commit
    if not offline:
        missing = sum(sizes.get(f, 0) for f in files if not (snapshot / f).is_file())
        check_space(
            missing, cache, SpaceMargin(), f"dataset {hub.repo}",
            hint="free space there, or set HF_HUB_CACHE to a cache on a larger disk",
        )  # fmt: skip
        with hub_errors(hub.repo, commit, endpoint, "dataset"):
            for f in files:
                hf_hub_download(
                    hub.repo, f, repo_type="dataset", revision=commit, endpoint=endpoint,
                    cache_dir=cache,
                )  # fmt: skip
        _remember_ref(hub, commit, cache)
    return HubFiles(hub, commit, files, snapshot, where)


@dataclass
class HubTables:
    """A Hub dataset's data files at one commit, read as tables (what a prompt set is made
    of: one column, or several by a named set's own rule)."""

    ref: str
    hub: HubDatasetRef
    endpoint: str | None
    commit: str
    files: list[str]
    where: str  # hf:ORG/NAME[/PATH]@<commit[:12]>, for messages
    tables: list[tuple[str, Table]]

    def source(self, column: str | None) -> HubSource:
        """The provenance a run records for prompts read from these tables."""
        # deferred: repro.hub (and huggingface_hub) load only for Hub datasets
        from repro.hub.errors import endpoint_url

        hub = self.hub
        return HubSource(
            ref=self.ref, endpoint=endpoint_url(self.endpoint), repo=hub.repo,
            revision=hub.revision, commit=self.commit, files=self.files, column=column,
            pinned=hub.pinned(self.commit, column),
        )  # fmt: skip


def hub_tables(
    ref: str, *, endpoint: str | None = None, cache_dir: Path | None = None
) -> HubTables:
    """A Hub dataset's data files, pinned to a commit SHA, read as tables."""
    got = fetch_hub_files(ref, endpoint=endpoint, cache_dir=cache_dir)
    tables = [
        (f"{got.where}/{f}", file_table(got.snapshot / f, f"{got.where}/{f}")) for f in got.files
    ]
    return HubTables(ref, got.hub, endpoint, got.commit, got.files, got.where, tables)


def load_hub_dataset(
    ref: str, *, endpoint: str | None = None, cache_dir: Path | None = None
) -> PromptSet:
    """A prompt set from a Hub dataset, pinned to a commit SHA (see the module docstring)."""
    found = hub_tables(ref, endpoint=endpoint, cache_dir=cache_dir)
    hub = found.hub
    hint = f"name the prompt column: hf:{hub.repo}" + (f"/{hub.path}" if hub.path else "")
    hint += f"@{hub.revision}:COLUMN"
    prompts, column = read_prompts(found.where, found.tables, hub.column, hint)
    dialogues = read_dialogues(found.tables, column)
    return PromptSet(ref, prompts, found.source(column), dialogues=dialogues)
