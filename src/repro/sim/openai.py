"""The OpenAI-compatible routes, shaped as SGLang 0.5.23 sends them.

Mirrors sglang/srt/entrypoints/openai/: serving_chat.py (`_generate_chat_stream`: a first
chunk with `role: assistant` and empty content, content chunks, then per choice a chunk with
`finish_reason`/`matched_stop`, an optional usage chunk with `choices: []`, then
`data: [DONE]`; chunk shapes from sse_utils.py, where `delta.reasoning_content` is always
present), serving_completions.py (finish_reason on the last text chunk; the usage chunk is
dumped with exclude_none), protocol.py (ModelCard/ModelList, UsageInfo, SglExt
`spec_tokens_details` for `return_spec_tokens_details`), usage_processor.py and utils.py
(`should_include_usage`). Non-streaming responses carry `metadata.simulated = true`
(metadata is a free-form dict there). Chat messages are rendered with a ChatML-style template
(`<|im_start|>role\\n...<|im_end|>`), not the model's own.
"""

from __future__ import annotations

import time
from contextlib import aclosing
from typing import Any

from aiohttp import web

from repro.sim.contract import (
    RequestValidationError,
    error_response,
    field_error,
    message_text,
    openai_sampling_params,
)
from repro.sim.http import SSE_DONE, Flow, Frontend, json_response, sse_event, sse_response
from repro.sim.request import Req
from repro.sim.tokenizer_manager import Prompt


def _usage(prompt: int, completion: int, cached: int | None) -> dict[str, Any]:
    # protocol.py UsageInfo, field order kept
    return {
        "prompt_tokens": prompt,
        "total_tokens": prompt + completion,
        "completion_tokens": completion,
        "prompt_tokens_details": None if cached is None else {"cached_tokens": cached},
        "reasoning_tokens": 0,
        "completion_tokens_details": None,
    }


def _spec_details(meta: dict[str, Any]) -> dict[str, Any] | None:
    """utils.py spec_tokens_details_from_meta_info."""
    keys = ("spec_accept_rate", "spec_accept_length", "spec_num_correct_drafts")
    if not any(k in meta for k in keys):
        return None
    return {
        "spec_accept_rate": meta.get("spec_accept_rate") or 0.0,
        "spec_accept_length": meta.get("spec_accept_length") or 0.0,
        "spec_cap_length": 0.0,
        "spec_block_accept_length": 0.0,
        "spec_num_correct_drafts": meta.get("spec_num_correct_drafts") or 0,
        "spec_num_proposed_drafts": meta.get("spec_num_proposed_drafts") or 0,
        "spec_verify_ct": meta.get("spec_verify_ct") or 0,
        "spec_correct_drafts_histogram": meta.get("spec_correct_drafts_histogram") or [],
        "spec_cap_lens_histogram": [],
    }


class OpenAIRoutes:
    """The handlers of the OpenAI routes; `add_to` registers them."""

    def __init__(self, frontend: Frontend) -> None:
        self.frontend = frontend
        self.cfg = frontend.cfg
        self.tokenizer_manager = frontend.tokenizer_manager

    def add_to(self, router: web.UrlDispatcher) -> None:
        router.add_get("/v1/models", self.models)
        router.add_get("/v1/models/{model:.*}", self.retrieve_model)
        router.add_post("/v1/completions", self.completions)
        router.add_post("/v1/chat/completions", self.chat_completions)

    def _card(self, model: str) -> dict[str, Any]:
        return {
            "id": model,
            "object": "model",
            "created": int(time.time()),
            "owned_by": "sglang",
            "root": model,
            "parent": None,
            "max_model_len": self.cfg.context_length,
        }

    async def models(self, request: web.Request) -> web.Response:
        return json_response({"object": "list", "data": [self._card(self.cfg.served_model_name)]})

    async def retrieve_model(self, request: web.Request) -> web.Response:
        model = request.match_info["model"]
        if model != self.cfg.served_model_name:
            error = {
                "message": f"The model '{model}' does not exist",
                "type": "invalid_request_error",
                "param": "model",
                "code": "model_not_found",
            }
            return json_response({"error": error}, 404)
        return json_response(self._card(model))

    # ---- request parsing ----------------------------------------------------------------------
    async def _body(self, request: web.Request) -> dict[str, Any]:
        media = request.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
        if media != "application/json":  # http_server.py validate_json_request
            raise RequestValidationError(
                [
                    {
                        "loc": ["header", "content-type"],
                        "msg": "Unsupported Media Type: Only 'application/json' is allowed",
                        "type": "value_error",
                    }
                ]
            )
        body = await self.frontend.read_json(request)
        if not isinstance(body, dict):
            raise field_error(
                "", body, "model_attributes_type", "Input should be a valid dictionary"
            )
        return body

    def _usage_flags(self, body: dict[str, Any]) -> tuple[bool, bool]:
        default = bool(self.cfg.args.stream_response_default_include_usage)
        options = body.get("stream_options")
        if options:
            return bool(options.get("include_usage")) or default, bool(
                options.get("continuous_usage_stats")
            )
        return default, False

    def _cached(self, req: Req) -> int | None:
        return req.cached_tokens if self.cfg.args.enable_cache_report else None

    def _total_usage(self, reqs: list[Req], body: dict[str, Any]) -> dict[str, Any]:
        """The usage of a whole response: each prompt counted once, not once per choice (n)."""
        per_prompt = reqs[:: max(1, int(body.get("n", 1)))]
        cached = None
        if self.cfg.args.enable_cache_report:
            cached = sum(r.cached_tokens for r in per_prompt)
        prompt_tokens = sum(len(r.prompt_ids) for r in per_prompt)
        return _usage(prompt_tokens, sum(len(r.output_ids) for r in reqs), cached)

    async def _run(self, request: web.Request, kind: str) -> web.StreamResponse:
        try:
            body = await self._body(request)
            if kind == "chat":
                messages = body.get("messages")
                if messages is None:
                    raise field_error("messages", body, "missing", "Field required")
                if not isinstance(messages, list):
                    raise field_error(
                        "messages", messages, "list_type", "Input should be a valid list"
                    )
                parts, said = [], []
                for message in messages:
                    if not isinstance(message, dict) or "role" not in message:
                        raise field_error("messages.role", message, "missing", "Field required")
                    content = message_text(message.get("content"))
                    parts.append(f"<|im_start|>{message['role']}\n{content}<|im_end|>\n")
                    said.append(content)
                text = "".join(parts) + "<|im_start|>assistant\n"
                max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
                prompts: list[tuple[Prompt, str | None, str]] = [
                    (self.tokenizer_manager.prompt_from_text(text), " ".join(said), "")
                ]
            else:
                if "prompt" not in body:
                    raise field_error("prompt", body, "missing", "Field required")
                prompts = self._completion_prompts(body["prompt"])
                max_tokens = body.get("max_tokens", 16)
            params = openai_sampling_params(body, max_tokens)
            stream = bool(body.get("stream", False))
        except RequestValidationError as e:
            return json_response(error_response(str(e)), 400)
        await self.frontend.loaded.wait()
        flow = self.frontend.open_flow(request)
        endpoint = "/v1/chat/completions" if kind == "chat" else "/v1/completions"
        try:
            try:
                reqs = []
                for i, (prompt, classify_text, _echo) in enumerate(prompts):
                    for j in range(params["n"]):
                        reqs.append(
                            self.tokenizer_manager.new_request(
                                prompt,
                                params,
                                stream=stream,
                                event=flow.event,
                                index=i * params["n"] + j,
                                classify_text=classify_text,
                            )
                        )
            except ValueError as e:
                return json_response(error_response(str(e), "BadRequestError"), 400)
            self.frontend.submit(flow, reqs)
            model = str(body.get("model") or "default")
            echoes = [echo for _, _, echo in prompts for _ in range(params["n"])]
            if body.get("echo") is not True:
                echoes = [""] * len(reqs)
            if stream:
                return await self._stream(request, flow, kind, model, body, echoes)
            await self.frontend.wait_done(flow)
            flow.record_whole_sends()
            return json_response(self._response(kind, model, reqs, body, echoes))
        finally:
            self.frontend.close_flow(flow, endpoint)

    def _completion_prompts(self, prompt: Any) -> list[tuple[Prompt, str | None, str]]:
        manager = self.tokenizer_manager
        if isinstance(prompt, str):
            return [(manager.prompt_from_text(prompt), None, prompt)]
        if isinstance(prompt, list) and prompt and all(isinstance(p, str) for p in prompt):
            return [(manager.prompt_from_text(p), None, p) for p in prompt]
        if isinstance(prompt, list) and all(
            isinstance(p, int) and not isinstance(p, bool) for p in prompt
        ):
            return [(manager.prompt_from_ids(prompt), None, manager.tokenizer.decode(prompt))]
        if isinstance(prompt, list) and all(isinstance(p, list) for p in prompt):
            return [(manager.prompt_from_ids(p), None, manager.tokenizer.decode(p)) for p in prompt]
        raise field_error("prompt", prompt, "string_type", "Input should be a valid string")

    # ---- responses ------------------------------------------------------------------------------
    def _response(
        self, kind: str, model: str, reqs: list[Req], body: dict[str, Any], echoes: list[str]
    ) -> dict[str, Any]:
        choices = []
        metas = [self.tokenizer_manager.meta_info(req, True) for req in reqs]
        for req, echo in zip(reqs, echoes, strict=True):
            fr = req.finish_reason or {}
            choice: dict[str, Any] = {"index": req.index}
            if kind == "chat":
                message = {"role": "assistant", "content": req.text(), "reasoning_content": None}
                choice["message"] = message
            else:
                choice["text"] = echo + req.text()
            choice.update(
                logprobs=None, finish_reason=fr.get("type"), matched_stop=fr.get("matched")
            )
            choices.append(choice)
        out: dict[str, Any] = {
            "id": reqs[0].rid,
            "object": "chat.completion" if kind == "chat" else "text_completion",
            "created": int(time.time()),
            "model": model,
            "choices": choices,
            "usage": self._total_usage(reqs, body),
            "metadata": {"weight_version": metas[0]["weight_version"], "simulated": True},
        }
        if body.get("return_spec_tokens_details"):
            details = [d for d in (_spec_details(m) for m in metas) if d is not None]
            if details:
                out["sglext"] = {"spec_tokens_details": details if len(reqs) > 1 else details[0]}
        return out

    async def _stream(
        self,
        request: web.Request,
        flow: Flow,
        kind: str,
        model: str,
        body: dict[str, Any],
        echoes: list[str],
    ) -> web.StreamResponse:
        resp = sse_response()
        include_usage, continuous = self._usage_flags(body)
        created = int(time.time())
        obj = "chat.completion.chunk" if kind == "chat" else "text_completion"
        text_sent = {req.index: 0 for req in flow.reqs}
        finished: dict[int, Req] = {}

        def chunk(req: Req, choice: dict[str, Any], usage: Any = None, with_usage: bool = False):
            data: dict[str, Any] = {
                "id": req.rid, "object": obj, "created": created, "model": model,
                "choices": [choice],
            }  # fmt: skip
            if with_usage or kind != "chat":
                data["usage"] = usage
            return sse_event(data)

        try:
            await resp.prepare(request)
            async with aclosing(self.frontend.updates(flow)) as updates:
                async for req, ids_sent in updates:
                    text = req.text()
                    delta = text[text_sent[req.index] :]
                    usage = None
                    if continuous:
                        usage = _usage(len(req.prompt_ids), len(req.output_ids), self._cached(req))
                    pieces = []
                    fr = req.finish_reason if req.finished else None
                    if kind == "chat":
                        if ids_sent == 0:
                            delta0 = {"reasoning_content": None, "role": "assistant", "content": ""}
                            pieces.append(chunk(req, self._chat_choice(req, delta0)))
                        if delta:
                            delta1 = {"reasoning_content": None, "content": delta}
                            pieces.append(
                                chunk(req, self._chat_choice(req, delta1), usage, continuous)
                            )
                    else:
                        if ids_sent == 0:
                            delta = echoes[req.index] + delta
                        choice = {
                            "index": req.index, "text": delta, "logprobs": None,
                            "finish_reason": fr["type"] if fr else None,
                            "matched_stop": fr.get("matched") if fr else None,
                        }  # fmt: skip
                        pieces.append(chunk(req, choice, usage))
                    text_sent[req.index] = len(text)
                    if req.finished:
                        finished[req.index] = req
                    for piece in pieces:
                        await resp.write(piece)
            if flow.gone:
                return resp
            last = flow.reqs[-1]
            if kind == "chat":
                for index in sorted(finished):
                    fr = finished[index].finish_reason or {}
                    choice = self._chat_choice(
                        finished[index],
                        {"reasoning_content": None},
                        fr.get("type"),
                        fr.get("matched"),
                    )
                    await resp.write(chunk(last, choice))
            if body.get("return_spec_tokens_details"):
                metas = [self.tokenizer_manager.meta_info(r, True) for r in flow.reqs]
                details = [d for d in (_spec_details(m) for m in metas) if d is not None]
                if details:
                    spec = details if len(details) > 1 else details[0]
                    data = {
                        "id": last.rid, "object": obj, "created": created, "model": model,
                        "choices": [], "usage": None, "sglext": {"spec_tokens_details": spec},
                    }  # fmt: skip
                    await resp.write(sse_event(data))
            if include_usage:
                usage = self._total_usage(flow.reqs, body)
                if kind != "chat":  # completions dump the usage chunk with exclude_none
                    usage = {k: v for k, v in usage.items() if v is not None}
                data = {
                    "id": last.rid, "object": obj, "created": created, "model": model,
                    "choices": [], "usage": usage,
                }  # fmt: skip
                await resp.write(sse_event(data))
            await resp.write(SSE_DONE)
            await resp.write_eof()
        except (ConnectionError, RuntimeError):
            flow.gone = True
        return resp

    @staticmethod
    def _chat_choice(
        req: Req, delta: dict[str, Any], finish: str | None = None, matched: Any = None
    ) -> dict[str, Any]:
        # sse_utils.py StreamChoice: logprobs, finish_reason and matched_stop always present
        return {
            "index": req.index,
            "delta": delta,
            "logprobs": None,
            "finish_reason": finish,
            "matched_stop": matched,
        }

    async def completions(self, request: web.Request) -> web.StreamResponse:
        return await self._run(request, "completion")

    async def chat_completions(self, request: web.Request) -> web.StreamResponse:
        return await self._run(request, "chat")
