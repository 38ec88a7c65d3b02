"""Recipe errors and findings: one line per problem, naming file, field path and expectation.

Every problem a user can fix in a recipe (or an image spec) ends in a
`repro.errors.RecipeError`, whose message holds one line per problem in the form

    recipes/x.yaml: server.extra_args[1]: unknown SGLang option '--specualtive-algorithm'
    (did you mean '--speculative-algorithm'?)

`check_recipe` returns `Finding`s instead of raising, so that warnings can be shown next to
errors and a whole directory can be checked in one go.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Severity = Literal["error", "warning"]
Loc = tuple[str | int, ...]


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
