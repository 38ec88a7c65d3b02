"""Errors a user can act on.

Library functions raise `ReproError` (or a subclass) for anything caused by input, the
machine or an external service; the CLI prints it as one clean message plus a hint and exits
with the error's `exit_code`. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

from repro.exitcodes import ExitCode


class ReproError(Exception):
    """A failure the user can fix: says what went wrong and, in `hint`, what to do."""

    exit_code: int = ExitCode.USER_ERROR

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class DockerUnavailable(ReproError):
    """The Docker engine, Compose or buildx is missing or not running."""

    exit_code = ExitCode.DOCKER


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
