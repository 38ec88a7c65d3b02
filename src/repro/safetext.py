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
