"""Headless Chromium as the tests run it: no sandbox (root), no network beyond the page, a
profile of the test's own."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
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


# Run in the page once it has loaded: its width, the images that loaded and the words of a
# `.name` element that the layout split over two lines (a name broken mid-word).
_PROBE = """<script>window.addEventListener('load', () => {
  const broken = [];
  for (const el of document.querySelectorAll('.name')) {
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.data.matchAll(/[A-Za-z0-9]+/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
        if (lines.size > 1) broken.push(m[0]);
      }
    }
  }
  const probe = document.createElement('pre');
  probe.id = 'probe';
  probe.textContent = JSON.stringify({
    width: document.documentElement.scrollWidth,
    images: [...document.images].filter(i => i.naturalWidth > 0).length,
    broken: broken,
  });
  document.body.appendChild(probe);
});</script>"""


@dataclass
class Layout:
    """A page as headless Chromium laid it out in a window `window` px wide."""

    window: int
    width: int  # the document's scroll width: more than the window is a horizontal scroll
    images: int  # images that loaded
    broken: list[str]  # words of names split over two lines


def layout(page: Path, profile: Path, window: int) -> Layout:
    """Lay `page` out in headless Chromium at `window` px (a probe copy beside it is read)."""
    probe = page.with_name(f"probe-{page.name}")
    probe.write_text(page.read_text().replace("</body>", f"{_PROBE}</body>"))
    command = [*chromium(profile, window), "--virtual-time-budget=5000", "--dump-dom"]
    dom = subprocess.run([*command, probe.as_uri()], timeout=90, check=True,
                         capture_output=True, text=True).stdout  # fmt: skip
    probe.unlink()
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.DOTALL)
    assert found is not None, dom[-500:]
    data = json.loads(html.unescape(found.group(1)))
    return Layout(window, data["width"], data["images"], data["broken"])
