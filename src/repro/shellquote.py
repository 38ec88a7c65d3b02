"""The one way a value reaches a generated shell script: quoted as a word, or escaped on a
comment line.

A word goes through `shlex.quote` (single quotes, which bash never expands, newlines
included). A comment ends at the first newline, so quoting cannot keep a value inside it:
`comment` writes every control and line-separator character as an escape (`\\n`, `\\x1b`),
keeping the comment on one line whatever a file name, lock or option holds.
"""

from __future__ import annotations

import shlex
import unicodedata
from collections.abc import Sequence


def word(value: str | int) -> str:
    """`value` as one shell word, expanded by nothing."""
    return shlex.quote(str(value))


def words(values: Sequence[str]) -> str:
    """Each value as its own quoted word, space-separated."""
    return " ".join(word(v) for v in values)


def printable(text: str) -> str:
    """`text` on one line: control, format and line-separator characters escaped."""
    out = []
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif unicodedata.category(char) in {"Cc", "Cf", "Zl", "Zp"}:
            out.append(char.encode("unicode_escape").decode("ascii"))
        else:
            out.append(char)
    return "".join(out)


def comment(text: str) -> str:
    """A `# ...` line that stays a comment whatever `text` holds."""
    return f"# {printable(text)}"


def has_control(text: str) -> bool:
    """Whether `text` holds a character `printable` would escape (for values to refuse)."""
    return printable(text) != text.replace("\\", "\\\\")
