"""`docker push` as it goes: layers done and bytes sent, one line at a time.

The engine prints per-layer byte counts only to a terminal, so the push runs on a
pseudo-terminal and its redrawn lines are read back (cursor movements stripped). Lines look
like `5f70bf18a086: Pushing [====>   ]  12.3MB/45.6MB` (docker/cli's jsonmessage renderer).
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
from dataclasses import dataclass, field

from repro.progress import Progress
from repro.units import human_bytes, parse_bytes

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_LAYER = re.compile(r"^([0-9a-f]{12}): (\w[\w ]*?)(?:\s+\[[^\]]*\])?\s*(?:(\S+)/(\S+))?\s*$")
_DONE = ("Pushed", "Layer already exists", "Mounted from")


@dataclass
class PushTally:
    """What the push has reported so far, per layer."""

    states: dict[str, str] = field(default_factory=dict)
    sent: dict[str, int] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)

    def feed(self, text: str) -> bool:
        """Take one redrawn line; True when it said something about a layer."""
        match = _LAYER.match(_ANSI.sub("", text).strip())
        if match is None:
            return False
        layer, state, current, total = match.groups()
        self.states[layer] = state
        if current and total:
            try:
                self.sent[layer], self.sizes[layer] = parse_bytes(current), parse_bytes(total)
            except ValueError:
                return True
        elif state.startswith(_DONE) and layer in self.sizes:
            self.sent[layer] = self.sizes[layer]
        return True

    def line(self) -> str:
        """e.g. `3/7 layers done, 120.0 MiB of 450.0 MiB sent`."""
        done = sum(state.startswith(_DONE) for state in self.states.values())
        text = f"{done}/{len(self.states)} layers done"
        if self.sizes:
            sent, total = sum(self.sent.values()), sum(self.sizes.values())
            text += f", {human_bytes(sent)} of {human_bytes(total)} sent"
        return text


def push_with_progress(reference: str, progress: Progress) -> tuple[int, str]:
    """Run `docker push REFERENCE`, reporting the tally on every change; return the exit code
    and the output's last lines (for an error message)."""
    tally = PushTally()
    primary, secondary = pty.openpty()
    process = subprocess.Popen(
        ["docker", "push", reference], stdin=subprocess.DEVNULL, stdout=secondary, stderr=secondary
    )
    os.close(secondary)
    lines: list[str] = []
    buffer = ""
    try:
        while True:
            try:
                chunk = os.read(primary, 4096)
            except OSError:  # the terminal closes when docker exits
                break
            if not chunk:
                break
            *complete, buffer = re.split(r"[\r\n]", buffer + chunk.decode(errors="replace"))
            for text in complete:
                if tally.feed(text):
                    progress(tally.line())
                elif _ANSI.sub("", text).strip():
                    lines.append(_ANSI.sub("", text).strip())
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM: the push stops with repro, not after it
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        raise
    finally:
        os.close(primary)
        code = process.wait()
    return code, "\n".join(lines[-5:])
