"""The simulated tokenizer manager, in front of one scheduler per DP rank.

It turns validated inputs into requests (with SGLang's length checks, tokenizer_manager.py
`_validate_one_request`), dispatches them round-robin over the DP ranks, reports the state
/server_info and /metrics read, and remembers per-request chunk send times for
REPRO_SIM_TRACE_FILE.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from repro.sim.clock import ClockStats, host_cost_s_per_token, min_time_scale
from repro.sim.config import SimConfig
from repro.sim.metrics import Exposition, TokenizerMetrics
from repro.sim.power import EnergyMeter
from repro.sim.request import Req
from repro.sim.scheduler import Scheduler
from repro.sim.textgen import Tokenizer, classify, classify_ids, request_rng, vocabulary


@dataclass
class Prompt:
    ids: list[int]
    text: str | None  # the text it came from, for classification


class TokenizerManager:
    def __init__(self, cfg: SimConfig) -> None:
        self.cfg = cfg
        model = cfg.profile.model
        self.tokenizer = Tokenizer(int(model.get("vocab_size", 151_936)), (cfg.eos_token_id,))
        self.metrics = TokenizerMetrics()
        self.schedulers = [Scheduler(cfg, rank, self.metrics) for rank in range(cfg.dp_size)]
        power = cfg.profile.power
        gpus = cfg.args.tp_size * cfg.args.pp_size
        self.energy = EnergyMeter(power, gpus, cfg.dp_size) if power else None
        for scheduler in self.schedulers:
            scheduler.energy = self.energy
        self._next_rank = 0
        self.ready = False  # ServerStatus.Up after "weight loading" and warmup
        self.startup_time = time.time()
        self._tasks: list[asyncio.Task[None]] = []
        self.active: dict[str, Req] = {}
        self.host_cost_s = host_cost_s_per_token()  # measured at start: sim/clock.py
        self.min_time_scale = self._min_time_scale()
        self._trace = open(cfg.trace_file, "a", encoding="utf-8") if cfg.trace_file else None  # noqa: SIM115

    def start(self) -> None:
        self._tasks = [asyncio.ensure_future(s.run()) for s in self.schedulers]

    def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self._trace:
            self._trace.close()

    # ---- inputs -----------------------------------------------------------------------------
    def prompt_from_text(self, text: str) -> Prompt:
        return Prompt(self.tokenizer.encode(text), text)

    def prompt_from_ids(self, ids: list[int]) -> Prompt:
        return Prompt(list(ids), None)

    def new_request(
        self,
        prompt: Prompt,
        params: dict[str, Any],
        *,
        stream: bool,
        event: asyncio.Event,
        rid: str | None = None,
        index: int = 0,
        log_metrics: bool = True,
        classify_text: str | None = None,
    ) -> Req:
        """One request; raises ValueError with SGLang's message for a request it refuses."""
        cfg = self.cfg
        ids = prompt.ids
        if not ids:
            raise ValueError("input_ids cannot be empty.")
        context = cfg.context_length
        if len(ids) >= context:
            if not cfg.args.allow_auto_truncate:
                raise ValueError(
                    f"The input ({len(ids)} tokens) is longer than the model's context "
                    f"length ({context} tokens)."
                )
            ids = ids[: context - 1]
        max_new = params.get("max_new_tokens", 128)
        if max_new is None:
            max_new = context - len(ids)
        max_new = int(max_new)
        if max_new < 0:
            raise ValueError(f"max_new_tokens must be at least 0, got {max_new}.")
        if len(ids) + max_new > context:
            if not cfg.args.allow_auto_truncate:
                raise ValueError(
                    "Requested token count exceeds the model's maximum context length of "
                    f"{context} tokens. You requested a total of {len(ids) + max_new} tokens: "
                    f"{len(ids)} tokens from the input messages and {max_new} tokens for the "
                    "completion. Please reduce the number of tokens in the input messages or "
                    "the completion to fit within the limit."
                )
            max_new = context - len(ids)
        if len(ids) >= cfg.kv_tokens:
            raise ValueError(
                f"Input length ({len(ids)} tokens) exceeds the maximum allowed length "
                f"({cfg.kv_tokens} tokens)."
            )
        text = classify_text if classify_text is not None else prompt.text
        category = classify(text) if text is not None else classify_ids(self.tokenizer, ids)
        script = None
        if cfg.answer_key is not None and prompt.text is not None:
            rng = request_rng(cfg.seed, ids, params.get("sampling_seed"), index, stream="answer:")
            answer = cfg.answer_key.answer(prompt.text, rng)
            script = self.tokenizer.encode(answer) if answer is not None else None
        stop = params.get("stop") or []
        stop_strs = [stop] if isinstance(stop, str) else [s for s in stop if s]
        return Req(
            rid=rid or uuid.uuid4().hex,
            index=index,
            prompt_ids=ids,
            category=category,
            max_new_tokens=max_new,
            min_new_tokens=int(params.get("min_new_tokens") or 0),
            ignore_eos=bool(params.get("ignore_eos")),
            stop_strs=stop_strs,
            stop_ids=set(params.get("stop_token_ids") or ()),
            stream=stream,
            rng=request_rng(cfg.seed, ids, params.get("sampling_seed"), index),
            vocab=vocabulary(category),
            tokenizer=self.tokenizer,
            eos_id=cfg.eos_token_id,
            mean_output_tokens=cfg.profile.mean_output_tokens,
            accept_cdf=cfg.accept_cdf_for(category, len(ids)),
            event=event,
            log_metrics=log_metrics,
            accept_rng=request_rng(
                cfg.seed, ids, params.get("sampling_seed"), index, stream="accept:"
            ),
            lossy=bool(cfg.algorithm) and cfg.lossy_drafter,
            script=script,
        )

    def submit(self, req: Req) -> None:
        scheduler = self.schedulers[self._next_rank % len(self.schedulers)]
        self._next_rank += 1
        self.active[req.rid] = req
        scheduler.submit(req)

    def abort(self, req: Req) -> None:
        self.schedulers[req.dp_rank].abort(req)

    def forget(self, req: Req) -> None:
        if self.active.get(req.rid) is req:
            del self.active[req.rid]

    def abort_rid(self, rid: str, abort_all: bool) -> None:
        """/abort_request: the request finishes with an abort reason (a graceful abort)."""
        targets = list(self.active.values()) if abort_all else [self.active.get(rid)]
        for req in targets:
            if req is None or req.finished or req.aborted:
                continue
            where = "waiting queue" if req.first_token_at == 0.0 else "running"
            self.abort(req)
            req.finish_reason = {
                "type": "abort",
                "message": f"Abort in {where}",
                "status_code": None,
                "err_type": None,
            }
            req.finished = True
            req.finished_at = time.perf_counter()
            req.event.set()

    # ---- outputs ----------------------------------------------------------------------------
    def meta_info(self, req: Req, finished: bool) -> dict[str, Any]:
        return req.meta_info(
            finished=finished,
            weight_version=str(self.cfg.args.weight_version or "default"),
            draft_tokens=self.cfg.draft_tokens,
            speculative=self.cfg.algorithm is not None,
            enable_metrics=bool(self.cfg.args.enable_metrics),
        )

    def trace(self, req: Req, endpoint: str, sends: list[tuple[float, int]]) -> None:
        if self._trace is None or not req.log_metrics:
            return
        record = {
            "rid": req.rid,
            "endpoint": endpoint,
            "stream": req.stream,
            "received": req.created_wall,
            "prompt_tokens": len(req.prompt_ids),
            "completion_tokens": len(req.output_ids),
            "finish_reason": req.finish_reason,
            "aborted": req.aborted,
            "chunks": [{"t": t, "tokens": n} for t, n in sends],
        }
        self._trace.write(json.dumps(record, separators=(",", ":")) + "\n")
        self._trace.flush()

    # ---- state --------------------------------------------------------------------------
    def num_running(self) -> int:
        return sum(len(s.running) for s in self.schedulers)

    def num_waiting(self) -> int:
        return sum(len(s.waiting) for s in self.schedulers)

    def _min_time_scale(self) -> float:
        """The smallest time-scale at which this host emits the profile's decode steps in
        time, at one running request and at the running cap (sim/clock.py)."""
        s = self.schedulers[0]
        spec = self.cfg.spec
        per_req = spec.mean_accept_length("chat") if spec is not None else 1.0
        return max(
            min_time_scale(s.decode_ms(n), n * per_req, self.host_cost_s)
            for n in (1, self.cfg.max_running_requests)
        )

    def clock_reading(self) -> dict[str, Any]:
        """The schedulers' clock counters summed, with this process's CPU time (the
        simulator's `/repro_sim/clock`, read by `repro bench` at a level's start and end)."""
        total = ClockStats()
        for s in self.schedulers:
            total.add(s.clock.snapshot())
        return {
            "simulated": True,
            "profile": self.cfg.profile.name,
            "time_scale": self.cfg.time_scale,
            **vars(total),
            "cpu_s": time.process_time(),
            "wall_s": time.perf_counter(),
            "host_cost_us_per_token": self.host_cost_s * 1e6,
            "min_time_scale": self.min_time_scale,
        }

    def flush_cache(self) -> bool:
        if any(not s.is_idle() for s in self.schedulers):
            for s in self.schedulers:
                s.flush()  # logs why
            return False
        return all(s.flush() for s in self.schedulers)

    def internal_states(self) -> list[dict[str, Any]]:
        """One dict per DP rank, as scheduler_components/internal_state.py builds it."""
        cfg = self.cfg
        base = cfg.server_args()
        states = []
        for s in self.schedulers:
            state = dict(base)
            state["world_size"] = cfg.args.tp_size * cfg.args.pp_size * cfg.dp_size
            state["startup_time"] = self.startup_time
            state["effective_max_running_requests_per_dp"] = cfg.max_running_requests
            state["last_gen_throughput"] = s.last_gen_throughput
            state["memory_usage"] = {
                "weight": 0.0,
                "kvcache": 0.0,
                "startup_available": 0.0,
                "token_capacity": s.kv_total,
                "token_capacity_swa": None,
                "graph": {},
            }
            accept = s.avg_spec_accept_length()
            if accept is not None:
                state["avg_spec_accept_length"] = accept
            states.append(state)
        return states

    def render_metrics(self) -> str:
        cfg = self.cfg
        out = Exposition()
        model = {"model_name": cfg.served_model_name, "engine_type": "unified"}
        extra = (
            cfg.args.extra_metric_labels if isinstance(cfg.args.extra_metric_labels, dict) else {}
        )
        model.update({str(k): v for k, v in extra.items()})

        def rank_labels(s: Scheduler) -> dict[str, Any]:
            labels = {**model, "tp_rank": 0, "pp_rank": 0, "moe_ep_rank": 0}
            if cfg.dp_size > 1:
                labels["dp_rank"] = s.dp_rank
            return labels

        def gauge(name: str, doc: str, value: Any) -> None:
            out.gauge(name, doc, [(rank_labels(s), float(value(s))) for s in self.schedulers])

        # the scheduler's last report, as SGLang's gauges hold it (scheduler.py Gauges)
        gauge(
            "sglang:num_running_reqs",
            "The number of running requests.",
            lambda s: s.gauges.num_running_reqs,
        )
        gauge(
            "sglang:num_queue_reqs",
            "The number of requests in the waiting queue.",
            lambda s: s.gauges.num_queue_reqs,
        )
        gauge(
            "sglang:gen_throughput",
            "The generation throughput (token/s).",
            lambda s: s.gauges.gen_throughput,
        )
        gauge(
            "sglang:cache_hit_rate",
            "The prefix cache hit rate.",
            lambda s: s.gauges.cache_hit_rate,
        )
        gauge("sglang:token_usage", "The token usage.", lambda s: s.gauges.token_usage)
        gauge(
            "sglang:num_used_tokens",
            "The number of used tokens.",
            lambda s: s.gauges.num_used_tokens,
        )
        gauge(
            "sglang:spec_accept_length",
            "The average acceptance length of speculative decoding.",
            lambda s: s.gauges.spec_accept_length,
        )
        gauge(
            "sglang:spec_accept_rate",
            "The average acceptance rate of speculative decoding "
            "(`accepted tokens / total draft tokens` in batch).",
            lambda s: s.gauges.spec_accept_rate,
        )
        gauge(
            "sglang:spec_num_draft_tokens",
            "The number of draft tokens per speculative step.",
            lambda s: cfg.draft_tokens,
        )
        out.histogram(
            "sglang:queue_time_seconds",
            "Histogram of queueing time in seconds.",
            [(rank_labels(self.schedulers[0]), self.metrics.queue)],
        )
        self.metrics.render(out, model)
        clock = self.clock_reading()
        for key, doc in (
            ("scheduled_s", "Simulated step time scheduled (scaled seconds)."),
            ("behind_s", "Seconds the simulated timeline stretched: steps the host ran late."),
            ("late_s", "Seconds the steps woke after their scheduled end, summed."),
            ("cpu_s", "CPU seconds this simulator process used."),
        ):
            name = f"repro_sim_clock_{key.removesuffix('_s')}_seconds_total"
            out.counter(name, doc, [({}, clock[key])])
        out.gauge(
            "repro_sim_min_time_scale",
            "The smallest time-scale this host keeps for the profile (measured at start).",
            [({}, clock["min_time_scale"])],
        )
        out.gauge(
            "repro_sim_info",
            "This server is repro's SGLang simulator; every number here is simulated.",
            [({"profile": cfg.profile.name, "simulated": "true"}, 1.0)],
        )
        return out.text()
