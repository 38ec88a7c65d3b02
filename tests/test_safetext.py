"""`repro.safetext.clean`: what a terminal would obey is gone, what a reader needs is kept."""

from __future__ import annotations

import pytest

from repro.safetext import MAX_CHARS, clean, clean_strings


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("\x1b]0;retitled\x07model", "model"),  # OSC window title, BEL-terminated
        ("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"),  # OSC hyperlink, ST-terminated
        ("\x1b[2J\x1b[Hcleared", "cleared"),  # CSI clear screen, cursor home
        ("\x9b31mred", "red"),  # C1 CSI
        ("a\x00b\x08c\rd\x7f", "abcd"),
        ("left\u202eright", "leftright"),  # bidi override
        ("tab\tand\nline", "tab\tand\nline"),
        ("https://alice:S3cret@reg:5000/ns", "https://alice:***@reg:5000/ns"),
        ("alice:S3cret@127.0.0.1:5000/team", "alice:***@127.0.0.1:5000/team"),
        ("http://127.0.0.1:30000 at 12:30", "http://127.0.0.1:30000 at 12:30"),
    ],
)
def test_clean(text: str, shown: str) -> None:
    assert clean(text) == shown


def test_a_huge_value_is_cut_and_says_so() -> None:
    shown = clean("M" * 10_000_000)
    assert shown.startswith("M" * MAX_CHARS) and shown.endswith("(9998000 more characters)")


def test_every_string_of_a_record_is_cleaned() -> None:
    data = {"\x1b[2Jkey": ["\x1b]0;t\x07v", 1.5, None, {"k": "\x07x"}]}
    assert clean_strings(data) == {"key": ["v", 1.5, None, {"k": "x"}]}
