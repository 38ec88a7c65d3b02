"""A real HTTP server on 127.0.0.1 that answers fixed JSON per path: a stand-in for a server
that is not what it claims (wrong types in /server_info, a foreign service on the port)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextmanager
def json_server(routes: dict[str, Any], seen: list[str] | None = None) -> Iterator[str]:
    """Serve `routes` (path -> JSON body; anything else 404) until the block ends; its URL.
    Each request's method and path is added to `seen`, where given."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            if seen is not None:
                seen.append(f"{self.command} {self.path}")
            path = self.path.split("?")[0]
            if path not in routes:
                self.send_error(404)
                return
            body = json.dumps(routes[path]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_HEAD = _answer

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
