"""A transport that swallows writes: feeds a client Connection bytes by hand, no socket."""

from __future__ import annotations


class NullTransport:
    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False
