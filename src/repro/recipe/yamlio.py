"""Reading YAML/JSON documents safely, and turning pydantic errors into one-line problems.

Shared by recipes, image specs and locks. Whatever the bytes are (not UTF-8, YAML syntax
errors, duplicate keys, non-string keys, recursive aliases, a list at the top level, ...), the
result is a mapping or a `RecipeError` naming the file: never a traceback.
"""

from __future__ import annotations

import copy
import json
import re
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from repro import fileread
from repro.errors import RecipeError, short_repr, suggestion
from repro.recipe.findings import Loc, display_path
from repro.safetext import shown_name
from repro.schema.validation import expected_text, format_loc

MAX_DEPTH = 40
MAX_BYTES = 4 * 1024 * 1024
MAX_VALUES = 100_000
# libyaml's parser when PyYAML has it (about 10x faster), else the pure-Python one.
_BASE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _YAML_LOADER(_BASE_LOADER):  # type: ignore[misc,valid-type]
    """The safe loader, also reading YAML 1.2 floats (`1e308`, `5E-3`): YAML 1.1 wants a dot
    in the mantissa and a sign in the exponent, and reads them as strings."""


_YAML_LOADER.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)
# Parsed documents by file content: a recipe's parents and image spec are read many times
# (checking a directory, `repro run`), and parsing dominates. Keyed by the bytes, never stale.
_PARSED: dict[tuple[bool, bytes], tuple[dict[str, Any], dict[Loc, int]]] = {}
_PARSED_MAX = 256


@dataclass
class Document:
    """One file's data, with the line of each field path (YAML only)."""

    path: Path
    data: dict[str, Any]
    lines: dict[Loc, int] = field(default_factory=dict)


def read_mapping(path: Path, what: str = "recipe") -> Document:
    """Read a YAML (or, for .json, JSON) file whose top level must be a mapping."""
    shown = display_path(path)
    try:
        raw = fileread.read_bytes(path, shown, MAX_BYTES)
    except fileread.UnreadableFile as err:
        raise RecipeError(err.message, hint=err.hint) from None
    except OSError as err:
        raise RecipeError(f"{shown}: cannot read the {what} ({err.strerror or err})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise RecipeError(
            f"{shown}: not UTF-8 text: byte 0x{raw[err.start]:02x} at line {line}",
            hint="save the file as UTF-8",
        ) from None
    is_json = path.suffix == ".json"
    cached = _PARSED.get((is_json, raw))
    if cached is not None:
        return Document(path=path, data=copy.deepcopy(cached[0]), lines=cached[1])
    text = text.removeprefix("\ufeff")
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise RecipeError(f"{shown}: NUL byte at line {line}; a {what} file is text")
    if is_json:
        data, lines = _parse_json(text, shown), dict[Loc, int]()
    else:
        data, lines = _parse_yaml(text, shown)
    if data is None:
        raise RecipeError(f"{shown}: the file is empty; a {what} is a mapping of fields")
    if not isinstance(data, dict):
        kind = type(data).__name__
        raise RecipeError(
            f"{shown}: the top level is a {kind}, expected a mapping of {what} fields",
            hint="a recipe starts with keys such as `image:`, `model:`, `topology:`",
        )
    problems = check_plain(data, shown)
    if problems:
        raise RecipeError.from_problems(problems)
    if len(_PARSED) >= _PARSED_MAX:
        _PARSED.clear()
    _PARSED[(is_json, raw)] = (copy.deepcopy(data), lines)
    return Document(path=path, data=data, lines=lines)


def _parse_json(text: str, shown: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=fileread.unique_keys)
    except fileread.DuplicateKey as err:
        problem = fileread.twice(shown, err)
        raise RecipeError(problem.message, hint=problem.hint) from None
    except json.JSONDecodeError as err:
        raise RecipeError(f"{shown}: invalid JSON at line {err.lineno}: {err.msg}") from None
    except RecursionError:
        raise RecipeError(f"{shown}: nested more than Python can read") from None


def _parse_yaml(text: str, shown: str) -> tuple[Any, dict[Loc, int]]:
    loader = _YAML_LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        lines: dict[Loc, int] = {}
        dups: list[str] = []
        _walk_nodes(node, (), lines, dups, set(), 0)
        if dups:
            raise RecipeError.from_problems([f"{shown}: {d}" for d in dups])
        return loader.construct_document(node), lines
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = err.problem or err.context or "syntax error"
        raise RecipeError(f"{shown}: invalid YAML{where}: {problem}") from None
    except yaml.YAMLError as err:
        raise RecipeError(f"{shown}: invalid YAML: {str(err).splitlines()[0]}") from None
    except (ValueError, TypeError, OverflowError) as err:  # e.g. a timestamp like 2024-13-45
        raise RecipeError(f"{shown}: invalid YAML value: {err}") from None
    except RecursionError:
        raise RecipeError(f"{shown}: nested more than Python can read") from None
    finally:
        loader.dispose()


def _walk_nodes(
    node: yaml.Node, loc: Loc, lines: dict[Loc, int], dups: list[str], seen: set[int], depth: int
) -> None:
    if id(node) in seen or depth > MAX_DEPTH:
        return
    seen.add(id(node))
    lines.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        keys: set[str] = set()
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue
            key = key_node.value
            if key in keys and key != "<<":
                where = format_loc((*loc, key))
                dups.append(f"{where}: duplicate key (line {key_node.start_mark.line + 1})")
            keys.add(key)
            lines[(*loc, key)] = key_node.start_mark.line + 1
            _walk_nodes(value_node, (*loc, key), lines, dups, seen, depth + 1)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk_nodes(item, (*loc, index), lines, dups, seen, depth + 1)


def check_plain(data: Any, shown: str) -> list[str]:
    """Problems that make data unfit for validation: non-string keys, cycles, deep nesting."""
    problems: list[str] = []
    stack: set[int] = set()
    visits = [0]

    def walk(value: Any, loc: Loc, depth: int) -> None:
        if len(problems) >= 20:
            return
        visits[0] += 1
        if visits[0] > MAX_VALUES:
            if visits[0] == MAX_VALUES + 1:
                problems.append(f"{shown}: more than {MAX_VALUES} values (YAML aliases expand)")
            return
        if depth > MAX_DEPTH:
            problems.append(f"{shown}: {format_loc(loc) or '<top>'}: nested too deeply")
            return
        if isinstance(value, dict | list):
            if id(value) in stack:
                problems.append(f"{shown}: {format_loc(loc)}: refers to itself (recursive alias)")
                return
            stack.add(id(value))
            if isinstance(value, dict):
                for key, item in value.items():
                    if not isinstance(key, str):
                        where = format_loc(loc) or "<top>"
                        problems.append(
                            f"{shown}: {where}: key {short_repr(key)} is not a string; quote it"
                        )
                        continue
                    walk(item, (*loc, key), depth + 1)
            else:
                for index, item in enumerate(value):
                    walk(item, (*loc, index), depth + 1)
            stack.discard(id(value))

    walk(data, (), 0)
    return problems


# --- pydantic errors -> problems -------------------------------------------------------------
def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def _fields_at(root: type[BaseModel], loc: Loc) -> list[str]:
    model: type[BaseModel] | None = root
    for part in loc:
        if isinstance(part, int):
            continue
        if model is None or part not in model.model_fields:
            return []
        model = _model_of(model.model_fields[part].annotation)
    return list(model.model_fields) if model else []


def _all_field_paths(root: type[BaseModel], prefix: str = "", depth: int = 0) -> dict[str, str]:
    """Every nested field name -> its dotted path (first one wins), for misplaced keys."""
    out: dict[str, str] = {}
    for name, info in root.model_fields.items():
        path = f"{prefix}{name}"
        sub = _model_of(info.annotation)
        if sub is not None and depth < 3:
            for key, value in _all_field_paths(sub, path + ".", depth + 1).items():
                out.setdefault(key, value)
        if prefix:
            out.setdefault(name, path)
    return out


def _unknown_key(root: type[BaseModel], loc: Loc) -> str:
    key = shown_name(loc[-1])
    if key is None:  # a line of some other file, say: described, not quoted
        return f"an unknown key of {len(str(loc[-1]))} characters that is not a field name"
    fields = _fields_at(root, loc[:-1])
    hint = suggestion(key, fields)
    if not hint:
        elsewhere = _all_field_paths(root).get(key)
        if elsewhere and format_loc(loc) != elsewhere:
            hint = f" (it belongs at {elsewhere})"
    if not hint and fields:
        hint = f"; valid keys: {', '.join(fields)}"
    return f"unknown key '{key}'{hint}"


def problem_lines(
    exc: ValidationError,
    root: type[BaseModel],
    docs: Sequence[Document],
    loc_prefix: Loc = (),
) -> list[str]:
    """One line per pydantic error: `file: field.path: what was expected`.

    `docs` are the files merged into the validated data, child first: each error is attributed
    to the file that supplied the value at its path.
    """
    foreign = _foreign(exc, root, docs, loc_prefix)
    if foreign:
        return foreign
    lines: list[str] = []
    for err in exc.errors(include_url=False):
        loc: Loc = tuple(p for p in err["loc"] if p != "[key]")
        full = (*loc_prefix, *loc)
        if err["type"] == "extra_forbidden":
            message = _unknown_key(root, loc)
        else:
            message = expected_text(err)
            if message.startswith("@") and ": " in message:  # a validator naming its field
                field_name, message = message[1:].split(": ", 1)
                loc = (*loc, field_name)
                full = (*loc_prefix, *loc)
        doc, line = origin(full, docs)
        shown = display_path(doc.path) if doc else "<recipe>"
        named = tuple(p if isinstance(p, int) or shown_name(p) else "<key>" for p in full)
        where = format_loc(named) or "<top>"
        suffix = f" (line {line})" if line else ""
        lines.append(f"{shown}: {where}: {message}{suffix}")
    return lines


def _foreign(
    exc: ValidationError, root: type[BaseModel], docs: Sequence[Document], loc_prefix: Loc
) -> list[str]:
    """One line for each file none of whose top-level keys is a field (not a recipe, image
    spec or campaign at all: a secret, a config file elsewhere): its keys, which may be its
    lines, are not listed."""
    if not any(e["type"] == "extra_forbidden" for e in exc.errors(include_url=False)):
        return []
    lines = []
    for doc in docs:
        data: Any = doc.data
        for part in loc_prefix:
            data = data.get(part) if isinstance(data, dict) else None
        fields = root.model_fields
        if not isinstance(data, dict) or not data or any(_near(k, fields) for k in data):
            continue
        lines.append(
            f"{display_path(doc.path)}: not {_kind(root)} file: none of its {len(data)} "
            "top-level keys is a field of one"
        )
    return lines


def _near(key: Any, fields: Iterable[str]) -> bool:
    """Whether `key` is one of `fields` or a misspelling of one (a recipe with a typo is a
    recipe, and hears "did you mean")."""
    return key in fields or (shown_name(key) is not None and bool(suggestion(key, fields)))


def _kind(root: type[BaseModel]) -> str:
    """`Recipe` -> `a recipe`, `ImageSpec` -> `an image spec`."""
    kind = re.sub(r"(?<!^)(?=[A-Z])", " ", root.__name__).lower()
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _present(data: Any, loc: Loc) -> int:
    depth = 0
    for part in loc:
        in_dict = isinstance(data, dict) and isinstance(part, str) and part in data
        in_list = isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data)
        if not (in_dict or in_list):
            break
        data = data[part]
        depth += 1
    return depth


def origin(loc: Loc, docs: Sequence[Document]) -> tuple[Document | None, int | None]:
    """The file (child-most on ties) that supplied the value at `loc`, and its line there."""
    best: Document | None = None
    best_depth = -1
    for doc in docs:
        depth = _present(doc.data, loc)
        if depth > best_depth:
            best, best_depth = doc, depth
    if best is None:
        return None, None
    for cut in range(len(loc), 0, -1):
        line = best.lines.get(loc[:cut])
        if line:
            return best, line
    return best, None
