"""SIGTERM and SIGHUP handled as Ctrl-C: a `kill`, a closed terminal or a batch scheduler's
time limit stop what any repro command started and keep its results, as Ctrl-C does."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from asyncio import AbstractEventLoop

HANDLED = (signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A termination signal, raised where the run is (every Ctrl-C path handles it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def signal_number(interrupt: KeyboardInterrupt) -> int:
    """The signal behind an interrupt: SIGINT for a plain Ctrl-C."""
    return interrupt.signum if isinstance(interrupt, Interrupted) else int(signal.SIGINT)


def signal_name(interrupt: KeyboardInterrupt) -> str:
    return signal.Signals(signal_number(interrupt)).name


def _raise_interrupted(signum: int, _frame: FrameType | None) -> None:
    """Raise where the run is; inside an event loop (bench), between two callbacks rather
    than in the middle of one, as asyncio.run does with Ctrl-C: no coroutine is cut
    half-way through a step, and the loop's clean-up cancels the rest."""
    loop = _running_loop()
    if loop is None:
        raise Interrupted(signum)
    loop.call_soon_threadsafe(_raise_now, signum)


def _running_loop() -> AbstractEventLoop | None:
    """This thread's running event loop; none where asyncio was never imported (fetch and
    launch do not pay its import to ask)."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    try:
        loop: AbstractEventLoop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return loop


def _raise_now(signum: int) -> None:
    raise Interrupted(signum)


@contextmanager
def signals_as_interrupts() -> Iterator[None]:
    """While inside: SIGTERM and SIGHUP raise `Interrupted` (main thread only: Python
    delivers signals there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _raise_interrupted) for sig in HANDLED}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def signals_ignored() -> Iterator[None]:
    """While cleaning up: a second Ctrl-C or SIGTERM does not cut the clean-up short."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (*HANDLED, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
