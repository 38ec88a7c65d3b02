"""SIGTERM, SIGHUP and SIGPIPE handled as Ctrl-C: a `kill`, a closed terminal, a batch
scheduler's time limit or a reader that went away (`repro run R 2>&1 | tee log`, then Ctrl-C,
which stops `tee` too) stop what any repro command started and keep its results, as Ctrl-C
does on a terminal.

Ctrl-C itself takes the same handler (unless the shell started repro with SIGINT ignored, as
it does a background job): under a pipe it stops the reader too, and the SIGPIPE of repro's
next write must not replace it as the reason (exit 130, not 141). The first interrupt taken
is the one reported; a closed pipe after it only silences the output.

A closed pipe would otherwise raise BrokenPipeError from whichever print came next, often the
one that says the run is being stopped, and cut the clean-up short. So the standard streams
are guarded while a command runs: a write to a closed reader goes to /dev/null from then on,
and the SIGPIPE the kernel sends with it interrupts the command once, unless an interrupt or
an error is already being handled (its clean-up then finishes, silently).
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

if TYPE_CHECKING:
    from asyncio import AbstractEventLoop

T = TypeVar("T")
HANDLED = (signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE)
_taken: int | None = None  # the signal of the interrupt under way: a closed pipe adds none
_loops = 0  # event loops the main thread is inside (`run_event_loop`), set-up to tear-down
_pending: int | None = None  # a signal taken inside one, not raised yet
_stream_closed = False  # a guarded standard stream found its reader gone


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
    """Raise where the run is; inside an event loop (bench), between two of its callbacks
    rather than in the middle of one, as asyncio.run does with Ctrl-C: no coroutine is cut
    half-way through a step, and the loop's clean-up cancels the rest.

    Never from the loop's own set-up or tear-down: an exception there leaves uvloop marked
    running ("Cannot close a running event loop", a traceback instead of the interrupt). A
    signal that lands there is kept and raised as the loop ends (`run_event_loop`)."""
    global _taken, _pending
    if signum == signal.SIGPIPE and (_taken is not None or _stopping() or not _reader_gone()):
        return  # already stopping: the output just goes nowhere now
    _taken = signum
    if not _loops:
        raise Interrupted(signum)
    _pending = signum
    loop = _running_loop()
    if loop is not None:
        loop.call_soon_threadsafe(_raise_pending)


def _raise_pending() -> None:
    global _pending
    signum, _pending = _pending, None
    if signum is not None:
        raise Interrupted(signum)


def run_event_loop(main: Coroutine[Any, Any, T], run: Callable[[Coroutine[Any, Any, T]], T]) -> T:
    """`run(main)` (asyncio.run, uvloop.run) with a signal raised as `Interrupted` between
    the loop's callbacks, before `main` starts if it came first, or once the loop is closed
    if it came while the loop was closing: never lost, never inside the loop's machinery."""
    global _loops
    if threading.current_thread() is not threading.main_thread():
        return run(main)  # signals reach the main thread only

    async def checked() -> T:
        if _pending is not None:
            main.close()
            _raise_pending()
        return await main

    _loops += 1
    try:
        return run(checked())
    finally:
        _loops -= 1
        if not _loops:
            _raise_pending()


def _reader_gone() -> bool:
    """Whether the SIGPIPE is the standard streams': one found closed by its guard, or a pipe
    whose reader went away (poll reports POLLERR on its write end). The kernel sends SIGPIPE
    for a socket written after its peer closed too (bench's connections, a server that
    hangs up); that write fails with EPIPE where it was made, and the command goes on."""
    if _stream_closed:
        return True
    poller = select.poll()
    for stream in (sys.__stdout__, sys.__stderr__):
        if stream is None:
            continue
        try:
            poller.register(stream.fileno(), 0)  # POLLERR and POLLHUP come unasked
        except (OSError, ValueError):  # not a file
            continue
    return any(events & (select.POLLERR | select.POLLHUP) for _fd, events in poller.poll(0))


def _stopping() -> bool:
    """Whether an exception other than the closed pipe's own is being handled: an interrupt
    or an error whose clean-up is under way."""
    exc = sys.exc_info()[1]
    while exc is not None:
        if not isinstance(exc, BrokenPipeError):
            return True
        exc = exc.__context__
    return False


def _running_loop() -> AbstractEventLoop | None:
    """The running event loop of `run_event_loop`; none while it starts or closes."""
    import asyncio  # already imported: asked only inside run_event_loop

    try:
        loop: AbstractEventLoop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return loop


class _PipeGuard:
    """A standard stream whose reader may go away: from the first write that finds it
    closed, the stream's descriptor points at /dev/null, so later writes (the clean-up's
    messages, a progress bar's thread) succeed and go nowhere."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def _closed(self) -> None:
        global _stream_closed
        _stream_closed = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._closed()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._closed()
            self._stream.flush()  # what was buffered, to /dev/null

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def _guarded_streams() -> Iterator[None]:
    saved = sys.stdout, sys.stderr
    for name, stream in (("stdout", sys.stdout), ("stderr", sys.stderr)):
        if stream is not None and not isinstance(stream, _PipeGuard):
            try:
                stream.fileno()
            except (OSError, ValueError, AttributeError):  # not a real file (a test's capture)
                continue
            setattr(sys, name, _PipeGuard(stream))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


@contextmanager
def signals_as_interrupts() -> Iterator[None]:
    """While inside: SIGINT, SIGTERM, SIGHUP and SIGPIPE raise `Interrupted` (main thread
    only: Python delivers signals there), and a closed stdout or stderr cannot raise."""
    global _taken, _pending
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    outermost = signal.getsignal(signal.SIGTERM) is not _raise_interrupted
    taken = [*HANDLED]
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not ignored
        taken.append(signal.SIGINT)
    previous = {sig: signal.signal(sig, _raise_interrupted) for sig in taken}
    try:
        with _guarded_streams():
            yield
    finally:
        if outermost:
            _taken = _pending = None
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
