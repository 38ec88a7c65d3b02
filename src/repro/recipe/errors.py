"""Recipe errors and findings: one line per problem, naming file, field path and expectation.

Every problem a user can fix in a recipe (or an image spec) ends in a `RecipeError`, whose
message holds one line per problem in the form

    recipes/x.yaml: server.extra_args[1]: unknown SGLang option '--specualtive-algorithm'
    (did you mean '--speculative-algorithm'?)

`check_recipe` returns `Finding`s instead of raising, so that warnings can be shown next to
errors and a whole directory can be checked in one go.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from repro.errors import ReproError

Severity = Literal["error", "warning"]
Loc = tuple[str | int, ...]


class RecipeError(ReproError):
    """A recipe (or the image spec, catalog or lock it names) is not valid.

    `problems` holds one line per problem; `message` joins them so the CLI prints them all.
    """

    def __init__(
        self, message: str, hint: str | None = None, problems: Sequence[str] | None = None
    ) -> None:
        self.problems = list(problems) if problems else [message]
        super().__init__(message, hint=hint)

    @classmethod
    def from_problems(cls, problems: Sequence[str], hint: str | None = None) -> RecipeError:
        lines = list(problems)
        if len(lines) == 1:
            return cls(lines[0], hint=hint, problems=lines)
        text = f"{len(lines)} problems:\n" + "\n".join(f"  {line}" for line in lines)
        return cls(text, hint=hint, problems=lines)


@dataclass(frozen=True)
class Finding:
    """One result of `check_recipe`: an error (the recipe cannot run) or a warning."""

    severity: Severity
    file: str
    path: str
    message: str
    rule: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.path}" if self.path else self.file
        return f"{where}: {self.message}"

    def to_dict(self) -> dict[str, str]:
        return {
            "severity": self.severity,
            "file": self.file,
            "path": self.path,
            "message": self.message,
            "rule": self.rule,
        }


def display_path(path: Path | str | None) -> str:
    """A path as the user typed it: relative to the current directory when it is below it."""
    if path is None:
        return "<recipe>"
    p = Path(path)
    try:
        return os.path.relpath(p) if p.is_absolute() and _is_below_cwd(p) else str(p)
    except ValueError:  # another drive (Windows)
        return str(p)


def _is_below_cwd(p: Path) -> bool:
    try:
        p.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return False
    return True


def format_loc(loc: Iterable[str | int]) -> str:
    """('server', 'extra_args', 1) -> 'server.extra_args[1]'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def did_you_mean(word: str, candidates: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The closest candidate to `word` (difflib), or None when nothing is close."""
    pool = list(dict.fromkeys(candidates))
    if not pool:
        return None
    matches = difflib.get_close_matches(word, pool, n=1, cutoff=cutoff)
    if not matches and word.lower() != word:
        matches = difflib.get_close_matches(word.lower(), pool, n=1, cutoff=cutoff)
    if not matches and len(word) >= 3:  # an abbreviation: "cuda" for "cuda_version"
        matches = sorted((c for c in pool if c.startswith(word)), key=len)[:1]
    return matches[0] if matches else None


def suggestion(word: str, candidates: Iterable[str], cutoff: float = 0.6) -> str:
    """' (did you mean 'x'?)' or ''."""
    best = did_you_mean(word, candidates, cutoff)
    return f" (did you mean '{best}'?)" if best else ""


def short_repr(value: object, limit: int = 60) -> str:
    """repr() cut to a length that fits on one line."""
    text = repr(value)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 3] + "..."
