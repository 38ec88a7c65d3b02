"""One exit-code table (repro.exitcodes): the docs show it as it is."""

from __future__ import annotations

from pathlib import Path

from repro.exitcodes import markdown_table
from repro.run import STAGE_NAMES

DOCS = Path(__file__).resolve().parents[1] / "docs" / "comparing.md"


def test_the_docs_show_the_table_the_code_uses() -> None:
    table = markdown_table(STAGE_NAMES)
    assert table in DOCS.read_text(), (
        "docs/comparing.md's exit-code table is out of date; paste in:\n" + table
    )
