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


_RANDOM_MOMENTS = textwrap.dedent(
    """
    import asyncio, collections, os, random, signal, threading, time
    from repro.bench.client.stream import measure
    from repro.interrupts import Interrupted, signals_as_interrupts

    async def step():
        await asyncio.sleep(0)

    def terminate_soon():
        time.sleep(random.uniform(0.0005, 0.02))
        os.kill(os.getpid(), signal.SIGTERM)

    random.seed(7)
    outcomes = collections.Counter()
    for _ in range(200):
        killer = threading.Thread(target=terminate_soon)
        try:
            with signals_as_interrupts():
                killer.start()  # not before: SIGTERM's default would end the test
                try:
                    began = time.monotonic()
                    while time.monotonic() - began < 5:
                        measure(step())
                finally:
                    killer.join()
            outcomes["lost"] += 1
        except Interrupted as interrupt:
            outcomes[interrupt.args[0]] += 1
        except BaseException as error:
            outcomes[repr(error)] += 1
    print(dict(outcomes))
    """
)


def test_sigterm_at_any_moment_of_a_measurement_is_the_interrupt() -> None:
    """A SIGTERM that lands while uvloop starts or closes (the moments between a short
    measurement's callbacks: accept's cache flush, a level's warm-up) stops the command as
    SIGTERM, not with "Cannot close a running event loop", and is never lost."""
    child = subprocess.run(
        [sys.executable, "-c", _RANDOM_MOMENTS],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert child.stdout.strip() == "{'SIGTERM': 200}", child.stderr[-2000:]
    assert "Task was destroyed" not in child.stderr
