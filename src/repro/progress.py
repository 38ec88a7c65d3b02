"""How a long step tells its caller what it is doing: one human-readable line at a time.

Builds, pulls and downloads take minutes; they report through a `Progress` and leave it to
the caller where the lines go (a spinner, the console, nowhere). Richer reports with their
own shape (a sweep's per-request events, a health wait's state) are separate protocols.
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """Receives one line about work in progress, e.g. "pulling python:3.12-slim"."""

    def __call__(self, line: str, /) -> None: ...


def quiet(line: str, /) -> None:
    """The `Progress` that shows nothing: the default where the caller asks for none."""
