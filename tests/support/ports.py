"""Free TCP ports on 127.0.0.1 for the servers tests start."""

from __future__ import annotations

import socket


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_port_ending(digits: str) -> int:
    """A free port whose number ends in `digits` (a port that reads like an HTTP status)."""
    for port in range(int("2" + digits), 65536, 10 ** len(digits)):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port ending in {digits}")
