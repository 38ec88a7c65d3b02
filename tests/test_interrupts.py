"""Ctrl-C under a pipe stops the reader too, so the SIGPIPE of repro's next write follows the
SIGINT: the interrupt reported is still Ctrl-C's (exit 130), inside bench's event loop as
outside it. A reader gone alone is SIGPIPE's. (`tests/run/test_run_pipe.py` runs the whole
`repro run | tee` case; there the order of the two signals is up to the scheduler.)"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

_CHILD = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from repro.bench.client.stream import measure
    from repro.interrupts import signal_name, signals_as_interrupts

    ctrl_c, in_loop = sys.argv[1] == "ctrl-c", sys.argv[2] == "loop"

    def stopped_reader():
        if ctrl_c:
            os.kill(os.getpid(), signal.SIGINT)  # the terminal's Ctrl-C, to repro first
        print("progress " * 8192, flush=True)  # the reader is gone: EPIPE, then SIGPIPE

    async def bench():
        stopped_reader()
        await asyncio.sleep(30)

    try:
        with signals_as_interrupts():
            if in_loop:
                measure(bench())
            else:
                stopped_reader()
                signal.pause()
    except KeyboardInterrupt as interrupt:
        sys.stderr.write(signal_name(interrupt))
    """
)


@pytest.mark.parametrize("where", ["loop", "plain"])
@pytest.mark.parametrize(("how", "reported"), [("ctrl-c", "SIGINT"), ("reader-gone", "SIGPIPE")])
def test_the_first_interrupt_is_the_one_reported(where: str, how: str, reported: str) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone
    try:
        child = subprocess.run(
            [sys.executable, "-c", _CHILD, how, where],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert child.stderr == reported
