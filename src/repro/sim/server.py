"""SGLang's native routes, as sglang/srt/entrypoints/http_server.py has them.

Routes: /health and /health_generate (503 while starting; otherwise a one-token generation
unless something is running), /ready, /ping, /model_info (+ deprecated /get_model_info),
/server_info (+ deprecated /get_server_info), /flush_cache (400 "Flush cache failed." while
requests run or wait), /generate, /abort_request and /metrics (with --enable-metrics). The
JSON documents with free-form room (/model_info, /server_info) say `"simulated": true`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from contextlib import aclosing
from typing import Any

from aiohttp import web

from repro.sim.calibration import run_provenance
from repro.sim.contract import (
    ContractError,
    GenerateInput,
    RequestValidationError,
    error_response,
    parse_generate,
)
from repro.sim.http import (
    SSE_DONE,
    Flow,
    Frontend,
    json_response,
    sse_event,
    sse_once,
    sse_response,
)
from repro.sim.request import Req

logger = logging.getLogger("sglang.srt.entrypoints.http_server")
HEALTH_CHECK_TIMEOUT = 20.0  # http_server.py HEALTH_CHECK_TIMEOUT (SGLANG_HEALTH_CHECK_TIMEOUT)
FLUSH_OK = (
    "Cache flushed.\nPlease check backend logs for more details. (When there are running or "
    "waiting requests, the operation will not be performed.)\n"
)


class NativeRoutes:
    """The handlers of SGLang's native routes; `add_to` registers them."""

    def __init__(self, frontend: Frontend) -> None:
        self.frontend = frontend
        self.cfg = frontend.cfg
        self.tokenizer_manager = frontend.tokenizer_manager
        self.provenance = run_provenance(self.cfg)  # this server's flags, not the profile's

    def add_to(self, router: web.UrlDispatcher) -> None:
        for path in ("/health", "/health_generate"):
            router.add_get(path, self.health_generate)
        router.add_get("/ready", self.ready)
        router.add_get("/ping", self.ready)
        router.add_get("/model_info", self.model_info)
        router.add_get("/get_model_info", self.model_info)
        router.add_get("/server_info", self.server_info)
        router.add_get("/get_server_info", self.server_info)
        router.add_route("GET", "/flush_cache", self.flush_cache)
        router.add_route("POST", "/flush_cache", self.flush_cache)
        router.add_route("POST", "/generate", self.generate)
        router.add_route("PUT", "/generate", self.generate)
        router.add_post("/abort_request", self.abort_request)
        router.add_get("/metrics", self.metrics)
        router.add_get("/repro_sim/power", self.power)
        router.add_get("/repro_sim/clock", self.clock)

    async def health_generate(self, request: web.Request) -> web.Response:
        if not self.tokenizer_manager.ready:
            return web.Response(status=503)
        generation = os.environ.get("SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION", "true")
        if request.path == "/health" and generation.lower() in ("0", "false", "no"):
            return web.Response(status=200)
        if self.tokenizer_manager.num_running() > 0:
            return web.Response(status=200)
        event = asyncio.Event()
        prompt = self.tokenizer_manager.prompt_from_ids([0])
        req = self.tokenizer_manager.new_request(
            prompt,
            {"max_new_tokens": 1, "temperature": 0.0},
            stream=False,
            event=event,
            rid=f"HEALTH_CHECK_{os.urandom(8).hex()}",
            log_metrics=False,
        )
        self.tokenizer_manager.submit(req)
        try:
            await asyncio.wait_for(event.wait(), HEALTH_CHECK_TIMEOUT)
        except TimeoutError:
            self.tokenizer_manager.abort(req)
            logger.error("Health check failed. Server couldn't get a response in time.")
            return web.Response(status=503)
        finally:
            self.tokenizer_manager.forget(req)
        return web.Response(status=200)

    async def ready(self, request: web.Request) -> web.Response:
        return web.Response(status=200 if self.tokenizer_manager.ready else 503)

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

    def _drafter_summary(self) -> dict[str, Any] | None:
        """Which acceptance the simulated drafter has: its profile entry, else the algorithm's."""
        cfg = self.cfg
        if not cfg.algorithm or cfg.spec is None:
            return None
        entry = cfg.drafter
        return {
            "path": cfg.args.speculative_draft_model_path,
            "profile_entry": entry.repo if entry else f"speculative.{cfg.algorithm} (no entry)",
            "accept_length": dict(cfg.spec.accept_length),
            "assumption": entry.assumption if entry else "",
            "lossy": cfg.lossy_drafter,
        }

    async def server_info(self, request: web.Request) -> web.Response:
        cfg = self.cfg
        info = cfg.server_args()
        info["launch_command"] = cfg.launch_command()
        info.update(
            max_total_num_tokens=cfg.kv_tokens,
            max_req_input_len=cfg.context_length - 1,
            # the scheduler's ready handshake (scheduler.py get_init_info), merged by
            # http_server.py build_server_info
            status="ready",
            hicache_object_layout={
                "enabled": False,
                "backend": None,
                "page_size": int(cfg.args.page_size or 1),
                "hicache_object_layout": {"pools": []},
                "reason": "Hierarchical cache is disabled",
            },
            kv_events=None,
            startup_time=self.tokenizer_manager.startup_time,
            internal_states=self.tokenizer_manager.internal_states(),
            version=self.frontend.version,
            frontend="python",
            simulated=True,
            sim_profile=cfg.profile.name,
            sim_time_scale=cfg.time_scale,
            sim_clock=self.tokenizer_manager.clock_reading(),
            sim_assumptions=cfg.profile.assumptions,
            sim_provenance=self.provenance,
            sim_speculative_registry=list(cfg.registry.names),
            sim_drafter=self._drafter_summary(),
            sim_forced_acceptance=cfg.forced.summary() if cfg.forced else None,
        )
        return json_response(info)

    async def flush_cache(self, request: web.Request) -> web.Response:
        try:
            timeout = float(request.query.get("timeout", "0") or 0)
        except ValueError:
            timeout = 0.0
        deadline = time.monotonic() + max(0.0, timeout)
        ok = self.tokenizer_manager.flush_cache()
        while not ok and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
            ok = self.tokenizer_manager.flush_cache()
        if ok:
            return web.Response(text=FLUSH_OK, status=200)
        return web.Response(text="Flush cache failed.\n", status=400)

    async def abort_request(self, request: web.Request) -> web.Response:
        try:
            body = await self.frontend.read_json(request)
        except RequestValidationError as e:
            return json_response(error_response(str(e)), 400)
        body = body if isinstance(body, dict) else {}
        self.tokenizer_manager.abort_rid(str(body.get("rid") or ""), bool(body.get("abort_all")))
        return web.Response(status=200)

    async def metrics(self, request: web.Request) -> web.Response:
        if not self.cfg.args.enable_metrics:
            raise web.HTTPNotFound()
        return web.Response(
            body=self.tokenizer_manager.render_metrics().encode(),
            headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"},
        )

    async def power(self, request: web.Request) -> web.Response:
        """The simulated GPUs' energy counter (not an SGLang endpoint: sim/power.py)."""
        meter = self.tokenizer_manager.energy
        if meter is None:
            return json_response({"error": "the simulator profile has no power entry"}, 404)
        return json_response(meter.reading(self.cfg.profile.name))

    async def clock(self, request: web.Request) -> web.Response:
        """The simulator's own lag counters (not an SGLang endpoint: sim/clock.py)."""
        return json_response(self.tokenizer_manager.clock_reading())

    async def generate(self, request: web.Request) -> web.StreamResponse:
        try:
            inp = parse_generate(await self.frontend.read_json(request))
        except RequestValidationError as e:
            return json_response(error_response(str(e)), 400)
        except ContractError as e:
            return json_response({"error": str(e)}, 400)
        await self.frontend.loaded.wait()
        flow = self.frontend.open_flow(request)
        try:
            try:
                reqs = self.build_generate(inp, flow.event)
            except ValueError as e:
                logger.error(f"[http_server] Error: {e}")
                if not inp.stream:
                    return json_response({"error": {"message": str(e)}}, 400)
                error = {"message": str(e), "type": "invalid_request_error", "code": 400}
                error["retryable"] = False
                return await sse_once(request, [{"error": error}])
            self.frontend.submit(flow, reqs)
            if inp.stream:
                return await self.stream_generate(request, flow, inp)
            await self.frontend.wait_done(flow)
            outs = [self.generate_out(req, inp, finished=True, offset=(0, 0)) for req in reqs]
            flow.record_whole_sends()
            return json_response(outs if inp.is_batch or len(outs) > 1 else outs[0])
        finally:
            self.frontend.close_flow(flow, "/generate")

    def build_generate(self, inp: GenerateInput, event: asyncio.Event) -> list[Req]:
        if inp.input_ids is not None:
            prompts = [self.tokenizer_manager.prompt_from_ids(ids) for ids in inp.input_ids]
        elif inp.texts is not None:
            prompts = [self.tokenizer_manager.prompt_from_text(t) for t in inp.texts]
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
                    self.tokenizer_manager.new_request(
                        prompt, params, stream=inp.stream, event=event, rid=rid, index=index
                    )
                )
        if len(reqs) > 1:
            inp.is_batch = True
        return reqs

    def generate_out(
        self, req: Req, inp: GenerateInput, *, finished: bool, offset: tuple[int, int]
    ) -> dict[str, Any]:
        """One /generate output (tokenizer_manager.py _handle_batch_output)."""
        ids_from, text_from = offset
        out: dict[str, Any] = {}
        text = req.text()
        if not self.cfg.args.skip_tokenizer_init:
            out["text"] = text[text_from:]
        out["output_ids"] = req.output_ids[ids_from:]
        out["meta_info"] = self.tokenizer_manager.meta_info(req, finished)
        if inp.return_prompt_token_ids:
            out["prompt_token_ids"] = list(req.prompt_ids)
        if inp.is_batch:
            out["index"] = req.index
        return out

    async def stream_generate(
        self, request: web.Request, flow: Flow, inp: GenerateInput
    ) -> web.StreamResponse:
        resp = sse_response()
        incremental = bool(self.cfg.args.incremental_streaming_output)
        text_sent = {req.index: 0 for req in flow.reqs}
        try:
            await resp.prepare(request)
            async with aclosing(self.frontend.updates(flow)) as updates:
                async for req, ids_sent in updates:
                    offset = (ids_sent, text_sent[req.index]) if incremental else (0, 0)
                    out = self.generate_out(req, inp, finished=req.finished, offset=offset)
                    if ids_sent == 0:
                        out["meta_info"]["response_sent_to_client_ts"] = time.time()
                    text_sent[req.index] = req.text_len
                    await resp.write(sse_event(out))
            if not flow.gone:
                await resp.write(SSE_DONE)
                await resp.write_eof()
        except (ConnectionError, RuntimeError) as e:  # client went away mid-stream
            flow.gone = True
            logger.info(f"[http_server] Client disconnected: {e}")
        return resp
