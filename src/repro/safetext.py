"""Text from a server or a file made safe to show: in a terminal, a log or an HTML page.

A server's `model_path`, an error body, a record edited by hand can carry terminal escape
sequences (retitle the window, clear the screen, hide text), other control characters,
`user:password@` in a URL, or megabytes in one field. `clean` is the one place that strips
the first two, masks the third and caps the last; call it on foreign text before it is
printed, logged or rendered.
"""

from __future__ import annotations

import re
from typing import Any

MAX_CHARS = 2000  # one shown value or line; a longer one is cut and says by how much

# ESC sequences (CSI `ESC [ ... final`, OSC/DCS/APC/PM/SOS strings up to BEL or ST, and
# two-byte ones), then any other C0/C1 control character except tab and newline, and the
# Unicode bidirectional overrides that reorder what a reader sees. Patterns, not compiled
# objects: `re` compiles them on the first `clean`, not on every command's start-up.
_ESCAPES = (
    r"\x1b\[[0-?]*[ -/]*[@-~]?"
    r"|\x1b[\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|[\x9b][0-?]*[ -/]*[@-~]?"
    r"|[\x90\x9d\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -~]?"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
)
# A field or column name as a user writes one: what `shown_name` shows of a key from a file.
_NAME = r"[A-Za-z_][A-Za-z0-9_.-]{0,63}"
# `scheme://user:password@` or `user:password@host`: the password part is masked.
_USERINFO = r"(?P<head>(?:[A-Za-z][\w+.-]{0,30}://)?[^\s:/@]{1,256}):[^\s/@]{0,256}@"


def clean(text: object, limit: int = MAX_CHARS) -> str:
    """`text` without escape sequences or control characters (tab and newline kept),
    passwords masked, at most `limit` characters (plus a note of how many were cut)."""
    raw = str(text)
    cut = max(0, len(raw) - 2 * limit)  # the rest is never shown: never scanned either
    shown = re.sub(_ESCAPES, "", raw[: 2 * limit])
    shown = re.sub(_USERINFO, r"\g<head>:***@", shown)
    cut += max(0, len(shown) - limit)
    return f"{shown[:limit]}... ({cut} more characters)" if cut else shown


def shown_name(text: object) -> str | None:
    """`text` when it looks like a field or column name (a letter or `_`, then at most 63
    letters, digits, `_`, `.` or `-`), else None: a key of a file that is not what it should
    be (a line of /etc/shadow, a CSV's first row) is described, never quoted, in a message."""
    return text if isinstance(text, str) and re.fullmatch(_NAME, text) else None


def shown_names(names: list[str], most: int = 20) -> str:
    """Names for a message: those that look like names (at most `most`), then how many
    others there are, never what they say."""
    shown = [n for n in names if shown_name(n) is not None]
    others = len(names) - len(shown[:most])
    listed = ", ".join(shown[:most])
    if not others:
        return listed
    return f"{listed} and {others} other(s)" if listed else f"{others} that are not names"


def clean_lines(text: str, limit: int = MAX_CHARS) -> str:
    """`text` cleaned line by line: each line capped, the line breaks kept."""
    return "\n".join(clean(line, limit) for line in text.split("\n"))


def clean_strings(data: Any, limit: int = MAX_CHARS) -> Any:
    """A JSON value with every string in it (keys too) cleaned; for a record that is shown."""
    if isinstance(data, str):
        return clean(data, limit)
    if isinstance(data, dict):
        return {clean(k, limit): clean_strings(v, limit) for k, v in data.items()}
    if isinstance(data, list):
        return [clean_strings(item, limit) for item in data]
    return data
