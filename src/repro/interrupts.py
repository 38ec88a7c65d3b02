"""SIGTERM and SIGHUP handled as Ctrl-C: a `kill`, a closed terminal or a batch scheduler's
time limit stop what any repro command started and keep its results, as Ctrl-C does."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

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
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        raise Interrupted(signum) from None
    loop.call_soon_threadsafe(_raise_now, signum)


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
