"""The SGLang server option catalog: which `launch_server` options an image accepts.

A catalog is the JSON dump of `ServerArgs.add_cli_args` (names, aliases, dest, action kind,
type, nargs, choices, default) plus the registered speculative algorithms. repro ships the
catalog of each SGLang version it knows as package data (`repro/catalogs/sglang-<v>.json`,
read by `repro.recipe.argv_check.load_catalog`); an image spec's patch set can add options
(`provides`), and a lock carries the catalog extracted from the built image itself, which is
then the truth.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic_core import CoreSchema, core_schema

from repro.errors import RecipeError, did_you_mean, short_repr

# Replacements for deprecated options, for catalogs that do not carry them. Mirrors the
# `new_flag=` of `DeprecatedStoreTrueAction` in sglang/srt/server_args.py (add_cli_args) and
# the attention-DP migration in sglang/srt/arg_groups (`--dp-size N --enable-dp-attention`
# resolves to `--attn-dp-size N`). A catalog entry's own "new_flag" wins over this table.
DEPRECATED_REPLACEMENTS: dict[str, str] = {
    "--disable-cuda-graph": "--cuda-graph-backend-decode disabled "
    "--cuda-graph-backend-prefill disabled",
    "--enable-dp-attention": "--attn-dp-size N (instead of --dp-size N --enable-dp-attention)",
    "--monokernel-backend": "--enable-amd-monokernel",
    "--stream-output": "--incremental-streaming-output",
}

_FLAG_KINDS = {"storetrue", "storefalse", "deprecatedstoretrue", "help", "booleanoptional"}
_HUMAN_INT = re.compile(r"^\d+(\.\d+)?[kKmMgGtT]?$")


MAX_CATALOG_TEXT = 1000  # one name or version in a catalog (an option's help is not capped)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _text(value: Any, what: str) -> str:
    """A catalog's name, version or spelling: text of one line (it is printed in messages and
    written into tables), or a TypeError/ValueError saying what it is instead."""
    if not isinstance(value, str):
        raise TypeError(f"{what} is a {type(value).__name__}, expected text")
    if _CONTROL.search(value) or len(value) > MAX_CATALOG_TEXT:
        raise ValueError(
            f"{what} is not one line of at most {MAX_CATALOG_TEXT} characters "
            "(it holds a line break or another control character, or is longer)"
        )
    return value


def _optional_text(value: Any, what: str) -> str | None:
    return None if value is None else _text(value, what)


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"{what} is a {type(value).__name__}, expected a list")
    return value


def _texts(value: Any, what: str) -> list[str]:
    return [_text(item, what) for item in _list(value, what)]


def _choice(value: Any, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise TypeError(f"{what}: a {type(value).__name__}, expected text or a number")
    return _text(str(value), what)


@dataclass(frozen=True)
class CatalogOption:
    """One server option: every spelling of it and how argparse reads its values."""

    options: tuple[str, ...]
    dest: str
    kind: str
    type: str | None = None
    nargs: int | str | None = None
    choices: tuple[str, ...] | None = None
    default: Any = None
    new_flag: str | None = None
    provided_by: str | None = None
    help: str | None = None

    @property
    def name(self) -> str:
        """The canonical (first, long) spelling."""
        return self.options[0]

    @property
    def deprecated(self) -> bool:
        return self.kind.startswith("deprecated")

    @property
    def replacement(self) -> str | None:
        return self.new_flag or DEPRECATED_REPLACEMENTS.get(self.name)

    @property
    def arity(self) -> tuple[int, int | None]:
        """(minimum, maximum) number of values; maximum None means unbounded."""
        if self.kind in _FLAG_KINDS or self.nargs == 0:
            return (0, 0)
        if self.nargs is None:
            return (1, 1)
        if self.nargs == "?":
            return (0, 1)
        if self.nargs == "*":
            return (0, None)
        if self.nargs == "+":
            return (1, None)
        if isinstance(self.nargs, int):
            return (self.nargs, self.nargs)
        return (1, 1)

    def check_value(self, value: str) -> str | None:
        """Why `value` is not acceptable for this option, or None when it is."""
        if self.choices is not None and value not in self.choices:
            hint = did_you_mean(value, self.choices)
            near = f" (did you mean '{hint}'?)" if hint else ""
            shown = ", ".join(self.choices[:12]) + (", ..." if len(self.choices) > 12 else "")
            return (
                f"{short_repr(value)} is not a valid choice for {self.name}{near}; one of: {shown}"
            )
        kind = self.type
        try:
            if kind == "int":
                int(value)
            elif kind == "float":
                float(value)
            elif kind == "human_readable_int" and not _HUMAN_INT.match(value):
                raise ValueError
            elif kind in ("loads", "json_list_type"):
                parsed = json.loads(value)
                if kind == "json_list_type" and not isinstance(parsed, list):
                    raise ValueError
        except ValueError:
            expected = {
                "int": "an integer",
                "float": "a number",
                "human_readable_int": "an integer such as 131072 or 128k",
                "loads": "a JSON value",
                "json_list_type": "a JSON list",
            }[kind or "int"]
            return f"{self.name} expects {expected}, got {short_repr(value)}"
        return None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "options": list(self.options),
            "dest": self.dest,
            "kind": self.kind,
            "type": self.type,
            "nargs": self.nargs,
            "choices": list(self.choices) if self.choices is not None else None,
            "default": self.default,
        }
        for key in ("new_flag", "provided_by", "help"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CatalogOption:
        if not isinstance(data, Mapping):
            raise TypeError(f"a flag is a {type(data).__name__}, expected a mapping")
        options = tuple(_texts(data["options"], "options"))
        if not options:
            raise ValueError("an option needs at least one spelling")
        where = f"flag {options[0]!r}"
        choices = data.get("choices")
        if choices is not None:
            choices = [_choice(c, f"{where}: choices") for c in _list(choices, f"{where}: choices")]
        nargs = data.get("nargs")
        if nargs is not None and not (type(nargs) is int and nargs >= 0):
            nargs = _text(nargs, f"{where}: nargs")
        if data.get("help") is not None and not isinstance(data["help"], str):
            raise TypeError(f"{where}: help is a {type(data['help']).__name__}, expected text")
        return cls(
            options=options,
            dest=_text(data.get("dest") or options[0].lstrip("-").replace("-", "_"), where),
            kind=_text(data.get("kind") or "store", f"{where}: kind"),
            type=_optional_text(data.get("type"), f"{where}: type"),
            nargs=nargs,
            choices=tuple(choices) if choices is not None else None,
            default=data.get("default"),
            new_flag=_optional_text(data.get("new_flag"), f"{where}: new_flag"),
            provided_by=_optional_text(data.get("provided_by"), f"{where}: provided_by"),
            help=data.get("help"),
        )


@dataclass
class Catalog:
    """The options and speculative algorithms of one SGLang build (plus any patch set)."""

    sglang_version: str
    options: list[CatalogOption]
    speculative_algorithms: list[str]
    source: str = ""
    env: list[str] = field(default_factory=list)
    released: str | None = None  # YYYY-MM-DD a release was built; None for an image's own
    # the model classes SGLang registers (srt/models EntryClass), e.g. DFlash2DraftModel
    model_architectures: list[str] = field(default_factory=list)
    _by_name: dict[str, CatalogOption] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        for opt in self.options:
            for spelling in opt.options:
                self._by_name.setdefault(spelling, opt)

    # --- lookups -------------------------------------------------------------------------
    def find(self, name: str) -> CatalogOption | None:
        """The option spelled `name` (any alias), or None."""
        return self._by_name.get(name)

    def has(self, name: str) -> bool:
        return name in self._by_name

    def first(self, *names: str) -> str | None:
        """The first of `names` this catalog accepts without deprecation, else any accepted."""
        for name in names:
            opt = self.find(name)
            if opt is not None and not opt.deprecated:
                return name
        return next((n for n in names if self.has(n)), None)

    def spellings(self) -> list[str]:
        return list(self._by_name)

    def suggest(self, name: str) -> str | None:
        return did_you_mean(name, self.spellings(), cutoff=0.6)

    def has_algorithm(self, algorithm: str) -> bool:
        return algorithm in self.speculative_algorithms

    # --- composition ---------------------------------------------------------------------
    def extended(
        self,
        options: Iterable[CatalogOption] = (),
        algorithms: Iterable[str] = (),
        env: Iterable[str] = (),
    ) -> Catalog:
        """A new catalog with options/algorithms/env added (e.g. what a patch set provides).

        An added spelling that the catalog already has is an error: argparse would refuse it.
        """
        added = list(options)
        clashes = [s for opt in added for s in opt.options if self.has(s)]
        if clashes:
            raise RecipeError(
                f"the patch set declares options SGLang {self.sglang_version} already has: "
                + ", ".join(clashes),
                hint="declare only the options the patch adds (see provides.options)",
            )
        algos = list(self.speculative_algorithms)
        algos += [a for a in algorithms if a not in algos]
        envs = list(self.env) + [e for e in env if e not in self.env]
        return Catalog(
            sglang_version=self.sglang_version,
            options=[*self.options, *added],
            speculative_algorithms=algos,
            source=self.source,
            env=envs,
            released=self.released,
            model_architectures=self.model_architectures,
        )

    def to_dict(self) -> dict[str, Any]:
        """The catalog in its JSON form (what a lock stores)."""
        out: dict[str, Any] = {
            "sglang_version": self.sglang_version,
            "source": self.source,
            "flags": [opt.to_dict() for opt in self.options],
            "builtin_speculative_algorithms": list(self.speculative_algorithms),
            "env": list(self.env),
        }
        if self.released is not None:
            out["released"] = self.released
        if self.model_architectures:
            out["model_architectures"] = list(self.model_architectures)
        return out

    @classmethod
    def __get_pydantic_core_schema__(cls, _source: Any, _handler: Any) -> CoreSchema:
        """In a pydantic model (the lock's `catalog`) a catalog is its JSON form."""

        def validate(value: Any) -> Catalog:
            if isinstance(value, Catalog):
                return value
            try:
                return cls.from_dict(value, origin="catalog")
            except RecipeError as err:  # the field path names it: "catalog: not an ..."
                raise ValueError(err.message.removeprefix("catalog: ")) from None

        return core_schema.no_info_plain_validator_function(
            validate,
            serialization=core_schema.plain_serializer_function_ser_schema(lambda c: c.to_dict()),
        )

    @classmethod
    def from_dict(cls, data: Any, origin: str = "<catalog>") -> Catalog:
        """Read the JSON form (the shipped files, or the `catalog` a lock carries)."""
        try:
            if not isinstance(data, Mapping):
                raise TypeError("top level is not a mapping")
            options = [CatalogOption.from_dict(f) for f in _list(data["flags"], "flags")]
            version = data.get("sglang_version")
            return cls(
                sglang_version=(
                    "unknown" if version in (None, "") else _text(version, "sglang_version")
                ),
                options=options,
                speculative_algorithms=_texts(
                    data.get("builtin_speculative_algorithms") or [],
                    "builtin_speculative_algorithms",
                ),
                source=_text(data.get("source") or origin, "source"),
                env=_texts(data.get("env") or [], "env"),
                released=_optional_text(data.get("released") or None, "released"),
                model_architectures=_texts(
                    data.get("model_architectures") or [], "model_architectures"
                ),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise RecipeError(
                f"{origin}: not an SGLang option catalog ({err})",
                hint="a catalog is the JSON dump of ServerArgs.add_cli_args",
            ) from None
