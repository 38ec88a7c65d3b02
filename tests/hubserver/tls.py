"""A tiny HTTPS file server on 127.0.0.1 (self-signed certificate) for remote-diff tests.

Clients trust it through `SSL_CERT_FILE=<cert_file>` (OpenSSL's default verify paths, which
Python's `ssl.create_default_context` uses).
"""

from __future__ import annotations

import asyncio
import ssl
import subprocess
import threading
from pathlib import Path

from aiohttp import web

from hubserver.server import _listen


class HttpsFiles:
    def __init__(self, workdir: Path) -> None:
        self.files: dict[str, bytes] = {}
        self.redirects: dict[str, str] = {}  # path -> the URL a 302 sends the client to
        self.cert_file = workdir / "cert.pem"
        self._key = workdir / "key.pem"
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def __enter__(self) -> HttpsFiles:
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
             "-keyout", str(self._key), "-out", str(self.cert_file),
             "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
            check=True, capture_output=True,
        )  # fmt: skip
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert_file, self._key)
        sock = _listen("127.0.0.1")
        self.port = sock.getsockname()[1]
        ready = threading.Event()

        async def serve(request: web.Request) -> web.Response:
            target = self.redirects.get(request.path.lstrip("/"))
            if target is not None:
                raise web.HTTPFound(target)
            data = self.files.get(request.path.lstrip("/"))
            if data is None:
                raise web.HTTPNotFound()
            return web.Response(body=data, content_type="text/x-diff")

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            app = web.Application()
            app.router.add_get("/{tail:.*}", serve)
            runner = web.AppRunner(app, access_log=None)
            loop.run_until_complete(runner.setup())
            loop.run_until_complete(web.SockSite(runner, sock, ssl_context=context).start())
            ready.set()
            loop.run_forever()
            loop.run_until_complete(runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name="https-files", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("https server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
