"""The continuous-batching scheduler loop and its timing model (one per DP rank).

Each iteration is one forward step, as in SGLang's scheduler (no mixed chunks):
- prefill, when waiting requests fit: up to `max_running_requests` running, the KV budget
  (held tokens + a reservation of NEW_TOKEN_RATIO x the remaining max_new_tokens, clipped at
  4096, per running request) and `--max-prefill-tokens` new tokens per batch. It costs
  `prefill_fixed_ms + prefill_per_token_ms x uncached prompt tokens` and gives each admitted
  request its first token. Prompt prefixes seen before count as cached (16-token blocks) unless
  --disable-radix-cache.
- otherwise decode: every running request advances. Plain decoding costs
  `decode_fixed_ms (x no_cuda_graph_fixed_factor) + decode_per_req_ms x n +
  decode_per_1k_ctx_ms x KV tokens / 1000` (a PP profile runs it as micro-batches through its
  stages; an EP profile adds its all-to-all: sim/profile.py) and emits one token per
  request. With a speculative algorithm each step is a verify step: it adds `draft_ms +
  n x verify_ms_per_token x (verified tokens - 1)` and emits 1 + k tokens per request, k
  drawn from the profile's acceptance distribution for the prompt's category, capped by the
  draft tokens; with SGLANG_SIMULATE_ACC_LEN one forced commit length per step for the whole
  batch instead (sim/forced.py).
When the KV cache overflows, the newest requests are retracted to the queue (SGLang's
retraction; meta_info num_retractions counts it). Durations are multiplied by
REPRO_SIM_TIME_SCALE and kept on an absolute clock, so CPU time spent emitting outputs does not
stretch the simulated timeline while the CPU keeps up; sim/clock.py counts where it did not.

The gauges /metrics shows are a snapshot (`Gauges`) taken where SGLang 0.5.23 takes it
(scheduler_components/metrics_reporter.py): at every prefill batch, every
`--decode-log-interval` decode steps (default 40, arg_groups/fields/observability.py) and when
the scheduler goes idle, not at every step.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from repro.sim.clock import StepClock
from repro.sim.config import SimConfig
from repro.sim.metrics import TokenizerMetrics
from repro.sim.power import EnergyMeter
from repro.sim.request import Req

logger = logging.getLogger("sglang.srt.managers.scheduler")
BLOCK = 16
# metrics_reporter.py GEN_THROUGHPUT_STALENESS_SECONDS: a prefill report zeroes a stale rate
GEN_THROUGHPUT_STALENESS_S = 30.0


@dataclass
class Gauges:
    """The scheduler's last reported stats (SchedulerStats' fields that /metrics shows)."""

    num_running_reqs: int = 0
    num_queue_reqs: int = 0
    gen_throughput: float = 0.0
    token_usage: float = 0.0
    num_used_tokens: int = 0
    cache_hit_rate: float = 0.0
    spec_accept_length: float = 0.0
    spec_accept_rate: float = 0.0


class PrefixCache:
    """Prompt prefixes seen before, in BLOCK-token blocks (a radix cache, coarsely)."""

    def __init__(self, enabled: bool, capacity_blocks: int) -> None:
        self.enabled = enabled
        self.capacity = max(1024, capacity_blocks)
        self.blocks: dict[int, None] = {}

    def _hashes(self, ids: list[int]) -> list[int]:
        hashes, h = [], 0
        for start in range(0, len(ids) - BLOCK + 1, BLOCK):
            h = hash((h, tuple(ids[start : start + BLOCK])))
            hashes.append(h)
        return hashes

    def match_and_insert(self, ids: list[int]) -> int:
        if not self.enabled:
            return 0
        matched, counting = 0, True
        for h in self._hashes(ids):
            if counting and h in self.blocks:
                matched += BLOCK
            else:
                counting = False
                self.blocks[h] = None
        while len(self.blocks) > self.capacity:
            del self.blocks[next(iter(self.blocks))]
        return min(matched, max(0, len(ids) - 1))

    def clear(self) -> None:
        self.blocks.clear()


class Scheduler:
    def __init__(self, cfg: SimConfig, dp_rank: int, metrics: TokenizerMetrics) -> None:
        self.cfg = cfg
        self.dp_rank = dp_rank
        self.metrics = metrics
        self.waiting: deque[Req] = deque()
        self.running: list[Req] = []
        self.kv_used = 0
        self.kv_total = cfg.kv_tokens
        self.cache = PrefixCache(not cfg.args.disable_radix_cache, cfg.kv_tokens // BLOCK)
        self._wake = asyncio.Event()
        self.clock = StepClock(cfg.time_scale)
        # what every timestamp reads: the wall clock here, a virtual one in sim/virtual.py
        self.now: Callable[[], float] = time.perf_counter
        self.gauges = Gauges()
        self.forward_ct = 0
        self.energy: EnergyMeter | None = None  # the profile's power model, when it has one
        self.forced_rng = random.Random(f"{cfg.seed}:forced:{dp_rank}")
        # cumulative since boot (or /flush_cache): internal_states avg_spec_accept_length
        self.spec_total_accept_tokens = 0
        self.spec_total_forward_ct = 0
        # current log window (decode_log_interval steps)
        self._win_start = time.perf_counter()
        self._win_steps = 0
        self._win_tokens = 0
        self._win_accept_tokens = 0
        self._win_correct = 0
        self._win_forward = 0
        self._last_log = 0.0
        self._last_prefill_log = 0.0
        self.last_gen_throughput = 0.0
        self.last_accept_length = 0.0
        self.last_accept_rate = 0.0

    # ---- requests in and out --------------------------------------------------------------
    def submit(self, req: Req) -> None:
        req.dp_rank = self.dp_rank
        self.waiting.append(req)
        self._wake.set()

    def abort(self, req: Req) -> None:
        if req.finished or req.aborted:
            return
        req.aborted = True
        if req in self.running:
            self.running.remove(req)
            self.kv_used -= req.seq_len()
        else:
            with contextlib.suppress(ValueError):
                self.waiting.remove(req)
        if req.log_metrics:
            self.metrics.aborted += 1
        logger.info(f"Abort request {req.rid}")

    def is_idle(self) -> bool:
        return not self.running and not self.waiting

    def flush(self) -> bool:
        """/flush_cache: only when nothing runs or waits (scheduler.py flush_cache)."""
        if not self.is_idle():
            logger.warning(
                "Cache not flushed because there are pending requests. "
                f"#queue-req: {len(self.waiting)}, #running-req: {len(self.running)}"
            )
            return False
        self.cache.clear()
        self.spec_total_accept_tokens = self.spec_total_forward_ct = 0
        logger.info("Cache flushed successfully!")
        return True

    def avg_spec_accept_length(self) -> float | None:
        if not self.cfg.algorithm or self.spec_total_forward_ct <= 0:
            return None
        return self.spec_total_accept_tokens / self.spec_total_forward_ct

    # ---- timing model ---------------------------------------------------------------------
    def prefill_ms(self, new_tokens: int) -> float:
        t = self.cfg.profile.timing
        ms = t.prefill_fixed_ms + t.prefill_per_token_ms * new_tokens
        if self.cfg.spec is not None:
            ms += self.cfg.spec.draft_ms
        return ms

    def decode_ms(self, n: int) -> float:
        t = self.cfg.profile.timing
        fixed = t.decode_fixed_ms * (1.0 if self.cfg.cuda_graph else t.no_cuda_graph_fixed_factor)
        ctx = t.decode_per_1k_ctx_ms * self.kv_used / 1000.0
        pipeline, ep = self.cfg.profile.pipeline, self.cfg.profile.expert_parallel
        if pipeline is not None:  # PP: micro-batches through the stages (sim/profile.py)
            ms = pipeline.round_ms(n, fixed, t.decode_per_req_ms, ctx)
        else:
            ms = fixed + t.decode_per_req_ms * n + ctx
        if ep is not None:  # EP: the MoE all-to-all, per step and per token through experts
            ms += ep.a2a_fixed_ms + ep.a2a_per_token_ms * n * self.cfg.verify_tokens
        spec = self.cfg.spec
        if spec is not None:
            ms += spec.draft_ms + n * spec.verify_ms_per_token * (self.cfg.verify_tokens - 1)
        return ms

    async def _step_wait(self, ms: float) -> None:
        running = len(self.running)
        duration = await self.clock.step(ms)
        if self.energy is not None:
            self.energy.step(duration, running)

    async def _wait_for_work(self) -> None:
        self.clock.idle()
        self._report(idle=True)
        self._wake.clear()
        await self._wake.wait()

    # ---- the loop -------------------------------------------------------------------------
    async def run(self) -> None:
        while True:
            if self.is_idle():
                await self._wait_for_work()
                continue
            batch, new_tokens = self._admit()
            if batch:
                await self._step_wait(self.prefill_ms(new_tokens))
                self._prefill_done(batch, new_tokens)
            elif self.running:
                self._retract_if_full()
                await self._step_wait(self.decode_ms(len(self.running)))
                self._decode_done()
            else:  # waiting requests that cannot start yet; wait for a change
                await self._wait_for_work()

    def _admit(self) -> tuple[list[Req], int]:
        slots = self.cfg.max_running_requests - len(self.running)
        if not self.waiting or slots <= 0:
            return [], 0
        available = self.kv_total - self.kv_used - sum(r.reserve_left() for r in self.running)
        batch: list[Req] = []
        new_tokens = 0
        max_prefill = int(self.cfg.args.max_prefill_tokens or 16384)
        while self.waiting and len(batch) < slots:
            req = self.waiting[0]
            need = req.seq_len() + req.reserve_left()
            if need > available and (self.running or batch):
                break
            if batch and new_tokens + req.seq_len() > max_prefill:
                break
            self.waiting.popleft()
            cached = self.cache.match_and_insert(req.prompt_ids)
            extend = req.seq_len() - cached
            if req.num_retractions == 0:
                req.cached_tokens = cached
            req.admitted_at = self.now()
            if req.log_metrics:
                self.metrics.queue.observe(req.admitted_at - req.created)
            batch.append(req)
            self.running.append(req)
            self.kv_used += req.seq_len()
            available -= need
            new_tokens += extend
        return batch, new_tokens

    def _prefill_done(self, batch: list[Req], new_tokens: int) -> None:
        self.forward_ct += 1
        now = self.now()
        for req in batch:
            if req.aborted:
                continue
            self.kv_used += req.advance(1)
            self._token_out(req, now, 1)
        cached = sum(r.cached_tokens for r in batch)
        # report_prefill_stats: per-batch cache hit rate; a decode rate over 30 s old is stale
        self.gauges.cache_hit_rate = cached / max(1, new_tokens + cached)
        if now - self._win_start > GEN_THROUGHPUT_STALENESS_S:
            self.last_gen_throughput = 0.0
        self._report(running=len(self.running) - len(batch))
        if now - self._last_prefill_log >= 0.1:
            self._last_prefill_log = now
            logger.info(
                f"Prefill batch, #new-seq: {len(batch)}, #new-token: {new_tokens}, "
                f"#cached-token: {cached}, token usage: {self.kv_used / self.kv_total:.2f}, "
                f"#running-req: {len(self.running) - len(batch)}, "
                f"#queue-req: {len(self.waiting)}"
            )
        self._drop_finished()

    def _retract_if_full(self) -> None:
        step_tokens = len(self.running) * self.cfg.verify_tokens
        retracted = 0
        while len(self.running) > 1 and self.kv_used + step_tokens > self.kv_total:
            req = self.running.pop()
            self.kv_used -= req.seq_len()
            req.num_retractions += 1
            self.waiting.appendleft(req)
            step_tokens -= self.cfg.verify_tokens
            retracted += 1
        if retracted:
            logger.warning(f"KV cache pool is full. Retract requests. #retracted_reqs: {retracted}")

    def _decode_done(self) -> None:
        self.forward_ct += 1
        now = self.now()
        speculative = self.cfg.algorithm is not None
        tokens = 0
        forced = self.cfg.forced
        commit = forced.draw(self.forced_rng, self.cfg.accept_cap + 1) if forced else None
        fixed_token = forced.fixed_token if forced else None
        for req in self.running:
            n = (commit or 1 + req.draw_accepted()) if speculative else 1
            produced = req.advance(n, fixed_token)
            if speculative:
                req.record_verify(produced)
                self._win_correct += produced - 1
                self._win_forward += 1
            tokens += produced
            self._token_out(req, now, produced)
        self.kv_used += tokens
        self._win_tokens += tokens
        if speculative:
            self._win_accept_tokens += tokens
        self._win_steps += 1
        self._drop_finished()
        if self._win_steps >= max(1, int(self.cfg.args.decode_log_interval or 40)):
            self._close_window(now)

    def _token_out(self, req: Req, now: float, produced: int) -> None:
        if req.first_token_at == 0.0:
            req.first_token_at = now
            if req.log_metrics:
                self.metrics.ttft["true" if req.stream else "false"].observe(now - req.created)
        elif req.log_metrics and produced:
            self.metrics.itl.observe((now - req.last_token_at) / produced, produced)
        req.last_token_at = now
        req.steps += 1
        if req.finished:
            req.finished_at = now
            req.event.set()
        elif req.stream and req.steps % max(1, int(self.cfg.args.stream_interval or 1)) == 0:
            req.event.set()

    def _drop_finished(self) -> None:
        if any(r.finished for r in self.running):
            keep = []
            for req in self.running:
                if req.finished:
                    self.kv_used -= req.seq_len()
                    self._finished(req)
                else:
                    keep.append(req)
            self.running = keep
            self._wake.set()

    def _finished(self, req: Req) -> None:
        if req.log_metrics:
            self.metrics.finished(
                req.stream,
                len(req.prompt_ids),
                len(req.output_ids),
                req.verify_ct,
                req.finished_at - req.created,
            )

    def _close_window(self, now: float) -> None:
        elapsed = max(1e-9, now - self._win_start)
        self.last_gen_throughput = self._win_tokens / elapsed
        msg = (
            f"Decode batch, #running-req: {len(self.running)}, #token: {self.kv_used}, "
            f"token usage: {self.kv_used / self.kv_total:.2f}, "
        )
        if self.cfg.algorithm is not None and self._win_forward:
            self.last_accept_length = self._win_accept_tokens / self._win_forward
            proposed = self._win_forward * max(1, self.cfg.draft_tokens - 1)
            self.last_accept_rate = self._win_correct / proposed
            self.spec_total_accept_tokens += self._win_accept_tokens
            self.spec_total_forward_ct += self._win_forward
            msg += (
                f"accept len: {self.last_accept_length:.2f}, "
                f"accept rate: {self.last_accept_rate:.2f}, "
            )
        msg += (
            f"cuda graph: {self.cfg.cuda_graph}, "
            f"gen throughput (token/s): {self.last_gen_throughput:.2f}, "
            f"#queue-req: {len(self.waiting)}"
        )
        if now - self._last_log >= 0.5:
            self._last_log = now
            logger.info(msg)
        self._report()
        self.gauges.spec_accept_length = self.last_accept_length
        self.gauges.spec_accept_rate = self.last_accept_rate
        self._win_start = now
        self._win_steps = self._win_tokens = self._win_accept_tokens = 0
        self._win_correct = self._win_forward = 0

    def _report(self, *, running: int | None = None, idle: bool = False) -> None:
        """Refresh the gauges (report_prefill_stats, report_decode_stats, and
        _maybe_log_idle_metrics, which zeroes the throughput of an idle scheduler)."""
        g = self.gauges
        g.num_running_reqs = len(self.running) if running is None else running
        g.num_queue_reqs = len(self.waiting)
        g.token_usage = self.kv_used / self.kv_total
        g.num_used_tokens = self.kv_used
        g.gen_throughput = 0.0 if idle else self.last_gen_throughput
