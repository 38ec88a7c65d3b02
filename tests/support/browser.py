"""Headless Chromium as the tests run it: no sandbox (root), no network beyond the page, a
profile of the test's own."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


def chromium(profile: Path, width: int = 1280, height: int = 1000) -> list[str]:
    """The command line up to the page and what to do with it (--screenshot=, --dump-dom)."""
    binary = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(binary).exists():
        pytest.fail("chromium is missing: run scripts/ensure-test-tools (Debian package chromium)")
    return [
        binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", f"--user-data-dir={profile}", f"--window-size={width},{height}",
    ]  # fmt: skip
