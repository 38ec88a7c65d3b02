"""Errors a user can act on.

Library functions raise `ReproError` (or a subclass) for anything caused by input, the
machine or an external service; the CLI prints it as one clean message plus a hint and exits
with the error's `exit_code`. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class ReproError(Exception):
    """A failure the user can fix: says what went wrong and, in `hint`, what to do."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class DockerUnavailable(ReproError):
    """The Docker engine, Compose or buildx is missing or not running."""

    exit_code = 4
