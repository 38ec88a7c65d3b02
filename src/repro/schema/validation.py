"""A pydantic validation error in words: the field's path and what was expected, with the
value found. The one formatter of every file repro reads (recipes, image specs, locks, run
records, server answers), so a bad value reads the same wherever it is."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from repro.errors import short_repr
from repro.schema.base import PATTERN_WORDS


def format_loc(loc: Iterable[str | int]) -> str:
    """('server', 'extra_args', 1) -> 'server.extra_args[1]'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def expected_text(err: Mapping[str, Any]) -> str:
    """What a pydantic error expected, in words, with the value it got."""
    kind = err["type"]
    ctx = err.get("ctx") or {}
    got = f", got {short_repr(err.get('input'))}"
    simple = {
        "int_type": "expected an integer",
        "int_parsing": "expected an integer",
        "int_from_float": "expected a whole number",
        "float_type": "expected a number",
        "float_parsing": "expected a number",
        "finite_number": "expected a finite number",
        "bool_type": "expected true or false",
        "bool_parsing": "expected true or false",
        "string_type": "expected a string (quote it)",
        "list_type": "expected a list",
        "dict_type": "expected a mapping",
        "model_type": "expected a mapping",
        "model_attributes_type": "expected a mapping",
    }
    if kind in simple:
        return simple[kind] + got
    if kind == "missing":
        return "required field is missing"
    if kind == "literal_error":
        return f"expected one of {ctx.get('expected', '')}{got}"
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern"))
        words = PATTERN_WORDS.get(pattern, f"text matching {pattern}")
        return f"expected {words}{got}"
    bounds = {
        "greater_than": ">",
        "greater_than_equal": ">=",
        "less_than": "<",
        "less_than_equal": "<=",
    }
    if kind in bounds:
        limit = next(iter(ctx.values()), "?")
        return f"expected a value {bounds[kind]} {limit}{got}"
    if kind in ("too_short", "too_long"):
        return f"{str(err['msg']).lower()}"
    if kind == "value_error":
        return str(err["msg"]).removeprefix("Value error, ")
    return f"{err['msg']}{got}"


def first_problem(err: ValidationError, within: tuple[str | int, ...] = ()) -> str:
    """The first error in one line, `field.path: what was expected, got X`, and how many more
    there are; `within` is the path of the validated part in its file."""
    first = err.errors(include_url=False)[0]
    where = format_loc((*within, *first["loc"])) or "<top>"
    more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"{where}: {expected_text(first)}{more}"
