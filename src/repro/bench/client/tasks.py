"""Stopping a background task of the client (a watchdog, a scraper) without losing a cancel."""

from __future__ import annotations

import asyncio
from typing import Any


async def stop_task(task: asyncio.Task[Any]) -> None:
    """Cancels `task` and waits for it to end. `asyncio.wait`, not `suppress(CancelledError)`
    around an await: the caller's own cancel (a deadline, Ctrl-C) still reaches the caller.
    The task's own error, if it ended on one, is raised here."""
    task.cancel()
    await asyncio.wait({task})
    if not task.cancelled():
        task.result()
