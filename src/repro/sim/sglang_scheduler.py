"""repro's scheduler process behind SGLang's own front end (HTTP server, tokenizer and
detokenizer managers).

SGLang 0.5.23's `launch_server(server_args, run_scheduler_process_func=F)`
(srt/entrypoints/http_server.py, Engine._launch_scheduler_processes in engine.py) starts F in
place of `run_scheduler_process` (srt/managers/scheduler.py), in a spawned process, with
`(server_args, port_args, gpu_id, tp_rank, pp_rank, dp_rank, pipe_writer)`. This F is the
simulator's own continuous-batching Scheduler (sim/scheduler.py: timing, admission under the
running-request cap and the KV budget, retraction, per-drafter acceptance draws), wired the
way SGLang's scheduler is (scheduler_components/ipc_channels.py): it PULLs
`TokenizedGenerateReqInput` and control requests from `scheduler_input_ipc_name`, PUSHes one
`BatchTokenIDOutput` per forward step to the detokenizer and control replies to the
tokenizer, all as io_struct's msgspec messages (`io_struct.async_sock_send/recv`), and sends
`get_init_info()`'s ready handshake on its pipe. Outputs follow output_streamer.py `accept`
(streams every `stream_interval` tokens, others when finished; incremental detokenisation
offsets as schedule_batch.py `init_incremental_detokenize`). With --enable-metrics it feeds
SGLang's own SchedulerMetricsCollector: at every prefill batch and every
`decode_log_interval` decode steps, as metrics_reporter.py does. So meta_info's `spec_*`,
chat's `sglext.spec_tokens_details`, `/server_info` and `/metrics` are SGLang's computation
from this scheduler's counts. It runs in SGLang's Python: it imports sglang, its
dependencies and repro.sim only.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from array import array
from dataclasses import dataclass
from typing import Any

from sglang.srt.managers import io_struct as io
from sglang.srt.observability.metrics_collector import (
    QueueCount,
    SchedulerMetricsCollector,
    SchedulerStats,
)
from sglang.srt.observability.req_time_stats import SchedulerReqTimeStats
from sglang.srt.runtime_context import get_context, get_spec

from repro.sim.config import SimConfig, resolve
from repro.sim.frontend_argv import ARGV_ENV
from repro.sim.metrics import TokenizerMetrics
from repro.sim.profile import CATEGORIES, accept_cdf
from repro.sim.request import Req
from repro.sim.scheduler import Scheduler
from repro.sim.textgen import Tokenizer, classify, request_rng, vocabulary

DETOKENIZE_OFFSET = 5  # schedule_batch.py INIT_INCREMENTAL_DETOKENIZATION_OFFSET
logger = logging.getLogger("sglang.srt.managers.scheduler")


class ModelTokens(Tokenizer):
    """The served model's own tokenizer, for the text the simulated request checks stop
    strings against (the detokenizer makes the text the client sees)."""

    def __init__(self, hf: Any) -> None:
        super().__init__(special_ids=tuple(hf.all_special_ids))
        self.hf = hf

    def decode_one(self, token_id: int) -> str:
        return str(self.hf.decode([token_id], skip_special_tokens=True))


def output_vocabularies(hf: Any) -> dict[str, list[int]]:
    """Per prompt category, the model tokenizer's ids of the simulator's word pieces
    (textgen.vocabulary), so generated text reads as words of that category."""
    pieces = Tokenizer()
    special = set(hf.all_special_ids)
    vocabs = {}
    for category in CATEGORIES:
        text = "".join(pieces.decode_one(i) for i in vocabulary(category))
        ids = sorted(set(hf.encode(text, add_special_tokens=False)) - special)
        vocabs[category] = ids or [i for i in range(len(hf)) if i not in special]
    return vocabs


@dataclass
class Wire:
    """What SGLang's scheduler keeps per request beside the tokens (schedule_batch.py Req)."""

    recv: io.TokenizedGenerateReqInput
    stats: SchedulerReqTimeStats
    sent_tokens: int = 0
    detok_started: bool = False


def sim_config(server_args: Any) -> SimConfig:
    """The simulator's settings for this argv, with the limits SGLang resolved (its
    speculative hooks, the drafter's block size) in place of the simulator's own."""
    cfg = resolve(json.loads(os.environ.get(ARGV_ENV, "[]")))
    resolved = get_context().resolved_server_args_dict()
    if resolved.get("max_running_requests"):
        cfg.max_running_requests = int(resolved["max_running_requests"])
    if resolved.get("max_total_tokens"):
        cfg.kv_tokens = int(resolved["max_total_tokens"])
    if cfg.algorithm and cfg.spec is not None:
        draft = int(get_spec().speculative_num_draft_tokens or cfg.draft_tokens)
        if draft != cfg.draft_tokens:
            cfg.draft_tokens = cfg.verify_tokens = draft
            cfg.accept_cap = draft - 1
            cfg.accept_cdfs = {
                c: accept_cdf(cfg.spec, c, cfg.accept_cap, cfg.verify_tokens) for c in CATEGORIES
            }
    return cfg


class FrontendScheduler(Scheduler):
    """The simulator's scheduler loop, its outputs sent as SGLang's scheduler sends them."""

    def __init__(self, cfg: SimConfig, hf_tokenizer: Any, sockets: dict[str, Any]) -> None:
        super().__init__(cfg, 0, TokenizerMetrics())
        self.tokens = ModelTokens(hf_tokenizer)
        self.vocabs = output_vocabularies(hf_tokenizer)
        self.eos_id = int(hf_tokenizer.eos_token_id if hf_tokenizer.eos_token_id is not None else 0)
        self.sockets = sockets
        self.wires: dict[str, Wire] = {}
        self.by_rid: dict[str, Req] = {}
        self._step_out: list[Req] = []
        self.collector: SchedulerMetricsCollector | None = None
        self.stats = SchedulerStats()
        self._pending: list[asyncio.Task[None]] = []

    # ---- requests in ------------------------------------------------------------------------
    def add(self, recv: io.TokenizedGenerateReqInput) -> None:
        sp = recv.sampling_params
        ids = list(recv.input_ids or [])
        text = recv.input_text if isinstance(recv.input_text, str) else None
        text = text if text is not None else str(self.tokens.hf.decode(ids))
        rid = str(recv.rid)
        category = classify(text)
        stop = sp.stop_strs or []
        req = Req(
            rid=rid,
            index=0,
            prompt_ids=ids,
            category=category,
            max_new_tokens=int(sp.max_new_tokens if sp.max_new_tokens is not None else 128),
            min_new_tokens=int(sp.min_new_tokens or 0),
            ignore_eos=bool(sp.ignore_eos),
            stop_strs=[stop] if isinstance(stop, str) else [s for s in stop if s],
            stop_ids=set(sp.stop_token_ids or ()),
            stream=bool(recv.stream),
            rng=request_rng(self.cfg.seed, ids, sp.sampling_seed, 0),
            vocab=self.vocabs[category],
            tokenizer=self.tokens,
            eos_id=self.eos_id,
            mean_output_tokens=self.cfg.profile.mean_output_tokens,
            accept_cdf=self.cfg.accept_cdf_for(category, len(ids)),
            event=asyncio.Event(),
            log_metrics=False,  # SGLang's tokenizer manager observes TTFT, ITL and e2e
            accept_rng=request_rng(self.cfg.seed, ids, sp.sampling_seed, 0, stream="accept:"),
            lossy=bool(self.cfg.algorithm) and self.cfg.lossy_drafter,
        )
        stats = SchedulerReqTimeStats(enable_metrics=self.collector is not None)
        stats.wait_queue_entry_time = time.perf_counter()
        self.wires[rid] = Wire(recv=recv, stats=stats)
        self.by_rid[rid] = req
        self.submit(req)

    def abort_rid(self, recv: io.AbortReq) -> None:
        """scheduler.py abort_request: the tokenizer manager ends each aborted request when
        the scheduler answers with an AbortReq for it."""
        rids = (
            list(self.by_rid)
            if recv.abort_all
            else [r for r in self.by_rid if r.startswith(recv.rid or "")]
        )
        for rid in rids:
            req = self.by_rid.pop(rid)
            self.abort(req)
            wire = self.wires.pop(rid)
            self.send(
                "tokenizer",
                io.AbortReq(
                    rid=rid,
                    finished_reason=recv.finished_reason,
                    http_worker_ipc=wire.recv.http_worker_ipc,
                ),
            )

    # ---- outputs ------------------------------------------------------------------------------
    def send(self, socket: str, obj: Any) -> None:
        self._pending.append(asyncio.ensure_future(io.async_sock_send(self.sockets[socket], obj)))
        self._pending = [t for t in self._pending if not t.done()]

    def _token_out(self, req: Req, now: float, produced: int) -> None:
        super()._token_out(req, now, produced)
        if req.rid in self.wires and req not in self._step_out:
            self._step_out.append(req)

    def _prefill_done(self, batch: list[Req], new_tokens: int) -> None:
        now = time.perf_counter()
        for req in batch:
            stats = self.wires[req.rid].stats
            stats.forward_entry_time = req.admitted_at
            stats.queue_duration_s += req.admitted_at - stats.wait_queue_entry_time
            stats.prefill_finished_time = now
            if self.collector is not None:
                self.collector.observe_queue_time(req.admitted_at - stats.wait_queue_entry_time)
        super()._prefill_done(batch, new_tokens)
        self._flush_step()
        cached = sum(r.cached_tokens for r in batch)
        if self.collector is not None:
            self.collector.increment_realtime_tokens(
                None, prefill_compute_tokens=new_tokens, prefill_cache_tokens=cached
            )
            self.stats.cache_hit_rate = cached / max(1, new_tokens + cached)  # this batch
            self._log_stats(len(self.running) - len(batch))

    def _decode_done(self) -> None:
        before = sum(len(r.output_ids) for r in self.running)
        running = list(self.running)
        super()._decode_done()
        if self.collector is not None:
            after = sum(len(r.output_ids) for r in running)
            self.collector.increment_realtime_tokens(None, decode_tokens=after - before)
        self._flush_step()

    def _close_window(self, now: float) -> None:
        super()._close_window(now)
        if self.collector is not None:
            self.stats.gen_throughput = self.last_gen_throughput
            if self.cfg.algorithm:
                self.stats.spec_accept_length = self.last_accept_length
                self.stats.spec_accept_rate = self.last_accept_rate
                self.stats.spec_num_steps = 1
                self.stats.spec_num_draft_tokens = self.cfg.draft_tokens
            self._log_stats(len(self.running))

    def _log_stats(self, running: int) -> None:
        stats, collector = self.stats, self.collector
        assert collector is not None
        stats.num_running_reqs = QueueCount(total=running)
        stats.num_queue_reqs = QueueCount(total=len(self.waiting))
        stats.token_usage = stats.full_token_usage = self.kv_used / self.kv_total
        stats.num_used_tokens = stats.kv_used_tokens = self.kv_used
        stats.kv_available_tokens = self.kv_total - self.kv_used
        stats.num_retracted_reqs = 0
        collector.log_stats(stats)

    def _flush_step(self) -> None:
        reqs, self._step_out = self._step_out, []
        out = [r for r in reqs if self._should_send(r)]
        if out:
            self.send("detokenizer", self._batch(out))
        for req in reqs:
            if req.finished:
                self.wires.pop(req.rid, None)
                self.by_rid.pop(req.rid, None)

    def _should_send(self, req: Req) -> bool:
        """output_streamer.py accept: a finished request, else a stream's first token and then
        every `stream_interval` unsent tokens."""
        if req.finished:
            return True
        if not req.stream:
            return False
        wire = self.wires[req.rid]
        interval = wire.recv.sampling_params.stream_interval or int(
            self.cfg.args.stream_interval or 1
        )
        unsent = len(req.output_ids) - wire.sent_tokens
        return interval == 1 or unsent >= interval or (wire.sent_tokens == 0 and unsent > 0)

    def _batch(self, reqs: list[Req]) -> io.BatchTokenIDOutput:
        new_ids, decode_ids, read_offsets, stats = [], [], [], []
        for req in reqs:
            wire = self.wires[req.rid]
            delta = req.output_ids[wire.sent_tokens :]
            wire.sent_tokens = len(req.output_ids)
            new_ids.append(array("l", delta))
            if not wire.detok_started:  # schedule_batch.py init_incremental_detokenize
                wire.detok_started = True
                surr = max(len(req.prompt_ids) - DETOKENIZE_OFFSET, 0)
                decode_ids.append(array("l", req.prompt_ids[surr:] + delta))
                read_offsets.append(len(req.prompt_ids) - surr)
            else:
                decode_ids.append(array("l", delta))
                read_offsets.append(0)
            if req.finished:
                wire.stats.completion_time = time.perf_counter()
            stats.append(wire.stats)
        params = [self.wires[r.rid].recv.sampling_params for r in reqs]
        speculative = self.cfg.algorithm is not None
        n = len(reqs)
        return io.BatchTokenIDOutput(
            rids=[r.rid for r in reqs],
            http_worker_ipcs=[self.wires[r.rid].recv.http_worker_ipc for r in reqs],
            finished_reasons=[r.finish_reason if r.finished else None for r in reqs],
            decoded_texts=[""] * n,
            decode_ids=decode_ids,
            read_offsets=read_offsets,
            output_ids=new_ids,
            skip_special_tokens=[p.skip_special_tokens for p in params],
            spaces_between_special_tokens=[p.spaces_between_special_tokens for p in params],
            no_stop_trim=[p.no_stop_trim for p in params],
            prompt_tokens=[len(r.prompt_ids) for r in reqs],
            reasoning_tokens=[0] * n,
            completion_tokens=[len(r.output_ids) for r in reqs],
            cached_tokens=[r.cached_tokens for r in reqs],
            input_token_logprobs_val=None,
            input_token_logprobs_idx=None,
            output_token_logprobs_val=None,
            output_token_logprobs_idx=None,
            input_top_logprobs_val=None,
            input_top_logprobs_idx=None,
            output_top_logprobs_val=None,
            output_top_logprobs_idx=None,
            input_token_ids_logprobs_val=None,
            input_token_ids_logprobs_idx=None,
            output_token_ids_logprobs_val=None,
            output_token_ids_logprobs_idx=None,
            output_token_entropy_val=None,
            output_token_sampling_mask=None,
            output_hidden_states=None,
            routed_experts=None,
            indexer_topk=None,
            placeholder_tokens_idx=None,
            placeholder_tokens_val=None,
            retraction_counts=[r.num_retractions for r in reqs],
            dp_ranks=[0] * n,
            time_stats=io.wrap_as_pickle(stats),
            spec_verify_ct=[r.verify_ct for r in reqs] if speculative else [],
            spec_num_correct_drafts=[r.correct_drafts for r in reqs] if speculative else [],
            spec_correct_drafts_histogram=[list(r.histogram) for r in reqs] if speculative else [],
        )
