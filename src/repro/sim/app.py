"""The simulator's aiohttp application: SGLang's native routes and the OpenAI routes together.

Every response carries an `X-Repro-Simulated: <profile>` header. With --api-key, every route
but /health*, /ready and /metrics wants `Authorization: Bearer <key>` (sglang/srt/utils/auth.py),
and answers 401 `{"error": "Unauthorized"}` without it. Written against aiohttp 3.8 (Debian 12)
and newer: no AppKey, no handler_cancellation.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from repro.sim.http import Frontend, json_response
from repro.sim.openai import OpenAIRoutes
from repro.sim.server import NativeRoutes

_PUBLIC_PREFIXES = ("/health", "/ready", "/metrics")  # utils/auth.py: never need a key
_MAX_BODY = 256 * 1024 * 1024


def _bearer_auth(key: str | None) -> Any:
    @web.middleware
    async def auth(request: web.Request, handler: Any) -> web.StreamResponse:
        if key and request.method != "OPTIONS" and not request.path.startswith(_PUBLIC_PREFIXES):
            scheme, _, token = request.headers.get("Authorization", "").partition(" ")
            if scheme.lower() != "bearer" or token != key:
                return json_response({"error": "Unauthorized"}, 401)
        return await handler(request)

    return auth


def build_app(frontend: Frontend) -> web.Application:
    app = web.Application(
        client_max_size=_MAX_BODY, middlewares=[_bearer_auth(frontend.cfg.args.api_key)]
    )
    profile = frontend.cfg.profile.name

    async def mark_simulated(request: web.Request, response: web.StreamResponse) -> None:
        response.headers["X-Repro-Simulated"] = profile

    app.on_response_prepare.append(mark_simulated)
    NativeRoutes(frontend).add_to(app.router)
    OpenAIRoutes(frontend).add_to(app.router)
    return app
