"""The HTTP server: SGLang's native routes, as sglang/srt/entrypoints/http_server.py has them.

Routes: /health and /health_generate (503 while starting; otherwise a one-token generation
unless something is running), /ready, /ping, /model_info (+ deprecated /get_model_info),
/server_info (+ deprecated /get_server_info), /flush_cache (400 "Flush cache failed." while
requests run or wait), /generate, /abort_request, /metrics (with --enable-metrics), and the
OpenAI routes of openai.py. Every response carries an `X-Repro-Simulated: <profile>` header,
and the JSON documents with free-form room (/model_info, /server_info) say `"simulated": true`.
Written against aiohttp 3.8 (Debian 12) and newer: no AppKey, no handler_cancellation.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from aiohttp import web

from repro.sim.config import SimConfig
from repro.sim.contract import (
    ContractError,
    RequestValidationError,
    error_response,
    json_invalid,
    parse_generate,
)
from repro.sim.engine import Engine
from repro.sim.request import Req

logger = logging.getLogger("sglang.srt.entrypoints.http_server")
HEALTH_CHECK_TIMEOUT = 20.0  # http_server.py HEALTH_CHECK_TIMEOUT (SGLANG_HEALTH_CHECK_TIMEOUT)
_PUBLIC_PREFIXES = ("/health", "/ready", "/metrics")  # utils/auth.py: never need a key
FLUSH_OK = (
    "Cache flushed.\nPlease check backend logs for more details. (When there are running or "
    "waiting requests, the operation will not be performed.)\n"
)


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)  # compact, like orjson


def dumps(obj: Any) -> bytes:
    return _ENCODER.encode(obj).encode()


def json_response(obj: Any, status: int = 200) -> web.Response:
    return web.Response(body=dumps(obj), status=status, content_type="application/json")


class Flow:
    """The requests behind one HTTP request, and whether its client is still there."""

    __slots__ = ("event", "gone", "reqs", "request", "sends")

    def __init__(self, request: web.Request) -> None:
        self.request = request
        self.event = asyncio.Event()
        self.reqs: list[Req] = []
        self.gone = False
        self.sends: dict[int, list[tuple[float, int]]] = {}

    def done(self) -> bool:
        return all(r.finished or r.aborted for r in self.reqs)


class SimServer:
    def __init__(self, cfg: SimConfig, engine: Engine) -> None:
        self.cfg = cfg
        self.engine = engine
        self.loaded = asyncio.Event()
        self.flows: set[Flow] = set()
        self.version = "0.5.23"

    # ---- plumbing ---------------------------------------------------------------------------
    def app(self) -> web.Application:
        from repro.sim.openai import OpenAIRoutes

        openai = OpenAIRoutes(self)
        app = web.Application(client_max_size=256 * 1024 * 1024, middlewares=[self._auth])
        app.on_response_prepare.append(self._mark_simulated)
        r = app.router
        for path in ("/health", "/health_generate"):
            r.add_get(path, self.health_generate)
        r.add_get("/ready", self.ready)
        r.add_get("/ping", self.ready)
        r.add_get("/model_info", self.model_info)
        r.add_get("/get_model_info", self.model_info)
        r.add_get("/server_info", self.server_info)
        r.add_get("/get_server_info", self.server_info)
        r.add_route("GET", "/flush_cache", self.flush_cache)
        r.add_route("POST", "/flush_cache", self.flush_cache)
        r.add_route("POST", "/generate", self.generate)
        r.add_route("PUT", "/generate", self.generate)
        r.add_post("/abort_request", self.abort_request)
        r.add_get("/metrics", self.metrics)
        r.add_get("/v1/models", openai.models)
        r.add_get("/v1/models/{model:.*}", openai.retrieve_model)
        r.add_post("/v1/completions", openai.completions)
        r.add_post("/v1/chat/completions", openai.chat_completions)
        return app

    async def _mark_simulated(self, request: web.Request, response: web.StreamResponse) -> None:
        response.headers["X-Repro-Simulated"] = self.cfg.profile.name

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        key = self.cfg.args.api_key
        if key and request.method != "OPTIONS" and not request.path.startswith(_PUBLIC_PREFIXES):
            header = request.headers.get("Authorization", "")
            scheme, _, token = header.partition(" ")
            if scheme.lower() != "bearer" or token != key:
                return json_response({"error": "Unauthorized"}, 401)
        return await handler(request)

    async def read_json(self, request: web.Request) -> Any:
        """The parsed body, or raise RequestValidationError as FastAPI would."""
        raw = await request.read()
        try:
            return json.loads(raw.decode("utf-8") if raw else "")
        except json.JSONDecodeError as e:
            raise json_invalid(e.msg, e.pos) from None
        except UnicodeDecodeError as e:
            raise json_invalid(str(e), e.start) from None

    def open_flow(self, request: web.Request) -> Flow:
        flow = Flow(request)
        self.flows.add(flow)
        return flow

    def close_flow(self, flow: Flow, endpoint: str) -> None:
        self.flows.discard(flow)
        for req in flow.reqs:
            if not req.finished and not req.aborted:
                self.engine.abort(req)
            self.engine.forget(req)
            self.engine.trace(req, endpoint, flow.sends.get(req.index, []))

    async def watch_disconnects(self) -> None:
        """aiohttp >= 3.9 does not cancel a handler whose client left: look for them."""
        while True:
            await asyncio.sleep(0.25)
            for flow in list(self.flows):
                transport = flow.request.transport
                if transport is None or transport.is_closing():
                    flow.gone = True
                    for req in flow.reqs:
                        self.engine.abort(req)
                    flow.event.set()

    async def wait(self, flow: Flow) -> None:
        await flow.event.wait()
        flow.event.clear()

    async def updates(self, flow: Flow) -> AsyncGenerator[tuple[Req, int], None]:
        """Each request of a streaming flow whenever it has new output (and once when it
        finishes), with the number of output ids already sent; every send is recorded in
        `flow.sends` for the trace, stamped when the consumer comes back for the next update,
        that is once it has written this one (serialising a chunk takes the simulator tens of
        microseconds: a stamp taken before would make a client look late by that much). Both
        the native and the OpenAI streams are built on it."""
        ids_sent = {req.index: 0 for req in flow.reqs}
        done: set[int] = set()
        while len(done) < len(flow.reqs) and not flow.gone:
            await self.wait(flow)
            for req in flow.reqs:
                if req.index in done or (req.aborted and not req.finished):
                    continue
                before = ids_sent[req.index]
                if len(req.output_ids) == before and not req.finished:
                    continue
                ids_sent[req.index] = len(req.output_ids)
                if req.finished:
                    done.add(req.index)
                new_ids = len(req.output_ids) - before
                yield req, before
                flow.sends.setdefault(req.index, []).append((time.time(), new_ids))

    def submit(self, flow: Flow, reqs: list[Req]) -> None:
        flow.reqs = reqs
        for req in reqs:
            self.engine.submit(req)

    # ---- native routes ------------------------------------------------------------------------
    async def health_generate(self, request: web.Request) -> web.Response:
        if not self.engine.ready:
            return web.Response(status=503)
        generation = os.environ.get("SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION", "true")
        if request.path == "/health" and generation.lower() in ("0", "false", "no"):
            return web.Response(status=200)
        if self.engine.num_running() > 0:
            return web.Response(status=200)
        event = asyncio.Event()
        prompt = self.engine.prompt_from_ids([0])
        req = self.engine.new_request(
            prompt,
            {"max_new_tokens": 1, "temperature": 0.0},
            stream=False,
            event=event,
            rid=f"HEALTH_CHECK_{os.urandom(8).hex()}",
            log_metrics=False,
        )
        self.engine.submit(req)
        try:
            await asyncio.wait_for(event.wait(), HEALTH_CHECK_TIMEOUT)
        except TimeoutError:
            self.engine.abort(req)
            logger.error("Health check failed. Server couldn't get a response in time.")
            return web.Response(status=503)
        finally:
            self.engine.forget(req)
        return web.Response(status=200)

    async def ready(self, request: web.Request) -> web.Response:
        return web.Response(status=200 if self.engine.ready else 503)

    async def model_info(self, request: web.Request) -> web.Response:
        args, model = self.cfg.args, self.cfg.profile.model
        # mirrors http_server.py model_info(); the two last keys are the simulator's own
        return json_response(
            {
                "model_path": args.model_path,
                "served_model_name": self.cfg.served_model_name,
                "tokenizer_path": args.tokenizer_path or args.model_path,
                "is_generation": True,
                "preferred_sampling_params": getattr(args, "preferred_sampling_params", None),
                "weight_version": str(getattr(args, "weight_version", None) or "default"),
                "load_format": getattr(args, "load_format", "auto"),
                "reasoning_parser": getattr(args, "reasoning_parser", None),
                "tool_call_parser": getattr(args, "tool_call_parser", None),
                "disaggregation_mode": getattr(args, "disaggregation_mode", "null"),
                "has_image_understanding": False,
                "has_audio_understanding": False,
                "model_type": model.get("model_type"),
                "architectures": model.get("architectures"),
                "simulated": True,
                "sim_profile": self.cfg.profile.name,
            }
        )

    async def server_info(self, request: web.Request) -> web.Response:
        cfg = self.cfg
        info = cfg.server_args()
        info["launch_command"] = cfg.launch_command()
        info.update(
            max_total_num_tokens=cfg.kv_tokens,
            max_req_input_len=cfg.context_length - 1,
            kv_events=None,
            startup_time=self.engine.startup_time,
            internal_states=self.engine.internal_states(),
            version=self.version,
            frontend="python",
            simulated=True,
            sim_profile=cfg.profile.name,
            sim_assumptions=cfg.profile.assumptions,
            sim_speculative_registry=list(cfg.registry.names),
        )
        return json_response(info)

    async def flush_cache(self, request: web.Request) -> web.Response:
        try:
            timeout = float(request.query.get("timeout", "0") or 0)
        except ValueError:
            timeout = 0.0
        deadline = time.monotonic() + max(0.0, timeout)
        ok = self.engine.flush_cache()
        while not ok and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
            ok = self.engine.flush_cache()
        if ok:
            return web.Response(text=FLUSH_OK, status=200)
        return web.Response(text="Flush cache failed.\n", status=400)

    async def abort_request(self, request: web.Request) -> web.Response:
        try:
            body = await self.read_json(request)
        except RequestValidationError as e:
            return json_response(error_response(str(e)), 400)
        body = body if isinstance(body, dict) else {}
        self.engine.abort_rid(str(body.get("rid") or ""), bool(body.get("abort_all")))
        return web.Response(status=200)

    async def metrics(self, request: web.Request) -> web.Response:
        if not self.cfg.args.enable_metrics:
            raise web.HTTPNotFound()
        return web.Response(
            body=self.engine.render_metrics().encode(),
            headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"},
        )

    async def generate(self, request: web.Request) -> web.StreamResponse:
        try:
            inp = parse_generate(await self.read_json(request))
        except RequestValidationError as e:
            return json_response(error_response(str(e)), 400)
        except ContractError as e:
            return json_response({"error": str(e)}, 400)
        await self.loaded.wait()
        flow = self.open_flow(request)
        try:
            try:
                reqs = self.build_generate(inp, flow.event)
            except ValueError as e:
                logger.error(f"[http_server] Error: {e}")
                if not inp.stream:
                    return json_response({"error": {"message": str(e)}}, 400)
                error = {"message": str(e), "type": "invalid_request_error", "code": 400}
                error["retryable"] = False
                return await self.sse_once(request, [dumps({"error": error})])
            self.submit(flow, reqs)
            if inp.stream:
                return await self.stream_generate(request, flow, inp)
            while not flow.done() and not flow.gone:
                await self.wait(flow)
            outs = [self.generate_out(req, inp, finished=True, offset=(0, 0)) for req in reqs]
            for req in reqs:
                flow.sends[req.index] = [(time.time(), len(req.output_ids))]
            return json_response(outs if inp.is_batch or len(outs) > 1 else outs[0])
        finally:
            self.close_flow(flow, "/generate")

    def build_generate(self, inp: Any, event: asyncio.Event) -> list[Req]:
        if inp.input_ids is not None:
            prompts = [self.engine.prompt_from_ids(ids) for ids in inp.input_ids]
        elif inp.texts is not None:
            prompts = [self.engine.prompt_from_text(t) for t in inp.texts]
        else:
            raise ValueError("Either text, input_ids or input_embeds should be provided.")
        reqs = []
        for i, prompt in enumerate(prompts):
            params = inp.params[i] if len(inp.params) == len(prompts) else inp.params[0]
            n = int(params.get("n") or 1)
            for j in range(n):
                index = i * n + j
                rid = inp.rids[i] if i < len(inp.rids) else None
                rid = f"{rid}_{j}" if rid and n > 1 else rid
                reqs.append(
                    self.engine.new_request(
                        prompt, params, stream=inp.stream, event=event, rid=rid, index=index
                    )
                )
        if len(reqs) > 1:
            inp.is_batch = True
        return reqs

    def generate_out(
        self, req: Req, inp: Any, *, finished: bool, offset: tuple[int, int]
    ) -> dict[str, Any]:
        """One /generate output (tokenizer_manager.py _handle_batch_output)."""
        ids_from, text_from = offset
        out: dict[str, Any] = {}
        text = req.text()
        if not self.cfg.args.skip_tokenizer_init:
            out["text"] = text[text_from:]
        out["output_ids"] = req.output_ids[ids_from:]
        out["meta_info"] = self.engine.meta_info(req, finished)
        if inp.return_prompt_token_ids:
            out["prompt_token_ids"] = list(req.prompt_ids)
        if inp.is_batch:
            out["index"] = req.index
        return out

    async def sse_once(self, request: web.Request, chunks: list[bytes]) -> web.StreamResponse:
        resp = await self.sse_start(request)
        for chunk in chunks:
            await resp.write(b"data: " + chunk + b"\n\n")
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def sse_start(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(
            status=200, headers={"Content-Type": "text/event-stream; charset=utf-8"}
        )
        await resp.prepare(request)
        return resp

    async def stream_generate(
        self, request: web.Request, flow: Flow, inp: Any
    ) -> web.StreamResponse:
        resp = await self.sse_start(request)
        incremental = bool(self.cfg.args.incremental_streaming_output)
        text_sent = {req.index: 0 for req in flow.reqs}
        try:
            async with aclosing(self.updates(flow)) as updates:
                async for req, ids_sent in updates:
                    offset = (ids_sent, text_sent[req.index]) if incremental else (0, 0)
                    out = self.generate_out(req, inp, finished=req.finished, offset=offset)
                    if ids_sent == 0:
                        out["meta_info"]["response_sent_to_client_ts"] = time.time()
                    text_sent[req.index] = req.text_len
                    await resp.write(b"data: " + dumps(out) + b"\n\n")
            if not flow.gone:
                await resp.write(b"data: [DONE]\n\n")
                await resp.write_eof()
        except (ConnectionError, RuntimeError) as e:  # client went away mid-stream
            flow.gone = True
            logger.info(f"[http_server] Client disconnected: {e}")
        return resp
