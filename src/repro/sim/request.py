"""One generation request: its tokens, its accounting, and the outputs SGLang sends for it.

The output dicts mirror sglang/srt/managers/tokenizer_manager.py (`_handle_batch_output`):
`{"text", "output_ids", "meta_info"}` with meta_info keys `id`, `finish_reason`,
`prompt_tokens`, `weight_version`, `num_retractions`, [`forward_entry_time`,
`prefill_finished_time`, `queue_time` with --enable-metrics], `reasoning_tokens`,
`completion_tokens`, `cached_tokens`, `dp_rank`; on the finished output only:
`e2e_latency` and, when speculative decoding is on and the request had a verify step,
`spec_accept_rate`, `spec_accept_length` (completion_tokens / spec_verify_ct),
`spec_num_correct_drafts`, `spec_num_proposed_drafts` (spec_verify_ct x (draft tokens - 1)),
`spec_verify_ct`, `spec_correct_drafts_histogram` (_calculate_spec_decoding_metrics), and
with --enable-metrics the API server's stamps (`request_received_ts`, `first_token_latency`,
`api_server_dispatch_finish_ts`, `response_sent_to_client_ts`, `request_finished_ts`,
`decode_throughput`: req_time_stats.py).
Streams carry cumulative `text`/`output_ids` by default and deltas with
--incremental-streaming-output. Finish reasons are `{"type": "length", "length": n}` and
`{"type": "stop", "matched": <token id or string>}` (schedule_batch.py FINISH_*).
The simulator adds `"simulated": true` to meta_info (a free-form dict; clients ignore it).
"""

from __future__ import annotations

import asyncio
import bisect
import math
import random
import time
from typing import Any

from repro.sim.textgen import Tokenizer

CLIP_MAX_NEW_TOKENS = 4096  # mirrors SGLang's reservation clip (CLIP_MAX_NEW_TOKENS)
NEW_TOKEN_RATIO = 0.5  # share of the remaining max_new_tokens reserved at admission


def natural_length(rng: random.Random, mean_output_tokens: int) -> int:
    """Content tokens a request without ignore_eos emits before its EOS token (which then
    counts as one more): exponential, of mean about `mean_output_tokens`."""
    return int(rng.expovariate(1.0 / max(1, mean_output_tokens))) + 1


def mean_output_tokens(mean_natural: int, max_new_tokens: int) -> float:
    """The mean output (EOS included) of requests that stop at their natural length
    (`natural_length`) or at `max_new_tokens`, whichever comes first: sum over k <= max of
    P(output >= k), where the first two tokens always come and each further one with
    probability exp(-1 / mean)."""
    if max_new_tokens <= 1:
        return float(max(0, max_new_tokens))
    q = math.exp(-1.0 / max(1, mean_natural))
    return 1.0 + (1.0 - q ** (max_new_tokens - 1)) / (1.0 - q)


class Req:
    __slots__ = (
        "aborted",
        "accept_cdf",
        "accept_rng",
        "admitted_at",
        "cached_tokens",
        "category",
        "correct_drafts",
        "created",
        "created_wall",
        "dp_rank",
        "eos_at",
        "eos_id",
        "event",
        "finish_reason",
        "finished",
        "finished_at",
        "first_token_at",
        "histogram",
        "ignore_eos",
        "index",
        "last_token_at",
        "log_metrics",
        "lossy",
        "max_new_tokens",
        "num_retractions",
        "output_ids",
        "pieces",
        "prompt_ids",
        "rid",
        "rng",
        "script",
        "steps",
        "stop_ids",
        "stop_strs",
        "stream",
        "text_len",
        "tokenizer",
        "verify_ct",
        "vocab",
    )  # fmt: skip

    def __init__(
        self,
        *,
        rid: str,
        index: int,
        prompt_ids: list[int],
        category: str,
        max_new_tokens: int,
        min_new_tokens: int,
        ignore_eos: bool,
        stop_strs: list[str],
        stop_ids: set[int],
        stream: bool,
        rng: random.Random,
        vocab: list[int],
        tokenizer: Tokenizer,
        eos_id: int,
        mean_output_tokens: int,
        accept_cdf: list[float] | None,
        event: asyncio.Event,
        log_metrics: bool = True,
        accept_rng: random.Random | None = None,
        lossy: bool = False,
        script: list[int] | None = None,
    ) -> None:
        self.rid = rid
        self.index = index
        self.prompt_ids = prompt_ids
        self.category = category
        self.max_new_tokens = max_new_tokens
        self.ignore_eos = ignore_eos
        self.stop_strs = stop_strs
        self.stop_ids = stop_ids
        self.stream = stream
        self.rng = rng
        self.vocab = vocab
        self.tokenizer = tokenizer
        self.eos_id = eos_id
        self.accept_cdf = accept_cdf
        self.accept_rng = accept_rng or rng
        self.lossy = lossy  # the fault switch: accepted drafts are not the target's tokens
        self.event = event
        self.log_metrics = log_metrics
        natural = natural_length(rng, mean_output_tokens)
        self.script = script or []  # a scripted answer (sim/answers.py), then EOS
        self.eos_at = max(len(script) if script else natural, min_new_tokens)
        self.output_ids: list[int] = []
        self.pieces: list[str] = []
        self.text_len = 0
        self.finish_reason: dict[str, Any] | None = None
        self.finished = False
        self.aborted = False
        self.created = time.perf_counter()
        self.created_wall = time.time()
        self.admitted_at = 0.0
        self.first_token_at = 0.0
        self.last_token_at = 0.0
        self.finished_at = 0.0
        self.cached_tokens = 0
        self.num_retractions = 0
        self.verify_ct = 0
        self.correct_drafts = 0
        self.histogram: list[int] = []
        self.steps = 0
        self.dp_rank = 0

    # ---- scheduler side -------------------------------------------------------------------
    def seq_len(self) -> int:
        return len(self.prompt_ids) + len(self.output_ids)

    def reserve_left(self) -> int:
        left = min(self.max_new_tokens - len(self.output_ids), CLIP_MAX_NEW_TOKENS)
        return int(max(0, left) * NEW_TOKEN_RATIO)

    def draw_accepted(self) -> int:
        cdf = self.accept_cdf
        if not cdf:
            return 0
        return min(bisect.bisect_right(cdf, self.accept_rng.random()), len(cdf) - 1)

    def advance(self, n: int, fixed_token: int | None = None) -> int:
        """Generate up to `n` tokens (all `fixed_token`, when given: forced acceptance's
        "fixed" token mode); returns how many were produced (finishing may cut it)."""
        produced = 0
        new_pieces = []
        if len(self.output_ids) >= self.max_new_tokens:  # max_new_tokens 0: prefill only
            self.finish_reason = {"type": "length", "length": self.max_new_tokens}
            self.finished = True
            return 0
        for step in range(n):
            position = len(self.output_ids)
            if fixed_token is not None:
                token = fixed_token
            elif not self.ignore_eos and position >= self.eos_at:
                token = self.eos_id
            elif position < len(self.script):
                token = self.script[position]
            else:
                pick = int(self.rng.random() * len(self.vocab))
                if self.lossy and step > 0:  # an accepted draft that greedy would not emit
                    pick = (pick + 1) % len(self.vocab)
                token = self.vocab[pick]
            self.output_ids.append(token)
            produced += 1
            if (token == self.eos_id and not self.ignore_eos) or token in self.stop_ids:
                self.finish_reason = {"type": "stop", "matched": token}
            else:
                new_pieces.append(self.tokenizer.decode_one(token))
            if self.finish_reason is None and len(self.output_ids) >= self.max_new_tokens:
                self.finish_reason = {"type": "length", "length": self.max_new_tokens}
            if self.finish_reason is not None:
                break
        if new_pieces:
            delta = "".join(new_pieces)
            if self.stop_strs:
                self._check_stop_strings(delta)
            else:
                self.pieces.append(delta)
                self.text_len += len(delta)
        if self.finish_reason is not None:
            self.finished = True
        return produced

    def _check_stop_strings(self, delta: str) -> None:
        text = "".join(self.pieces)
        window_start = max(0, len(text) - max(len(s) for s in self.stop_strs))
        combined = text[window_start:] + delta
        for stop in self.stop_strs:
            at = combined.find(stop)
            if at >= 0:
                keep = text[:window_start] + combined[:at]
                self.pieces = [keep]
                self.text_len = len(keep)
                self.finish_reason = {"type": "stop", "matched": stop}
                return
        self.pieces.append(delta)
        self.text_len += len(delta)

    def record_verify(self, produced: int) -> None:
        accepted = max(0, produced - 1)
        self.verify_ct += 1
        self.correct_drafts += accepted
        if len(self.histogram) <= accepted:
            self.histogram.extend([0] * (accepted + 1 - len(self.histogram)))
        self.histogram[accepted] += 1

    # ---- output side (tokenizer manager) ----------------------------------------------------
    def _wall(self, t: float) -> float:
        """A perf_counter time of this request as epoch seconds."""
        return self.created_wall + (t - self.created)

    def text(self) -> str:
        if len(self.pieces) > 1:
            self.pieces = ["".join(self.pieces)]
        return self.pieces[0] if self.pieces else ""

    def meta_info(
        self,
        *,
        finished: bool,
        weight_version: str,
        draft_tokens: int,
        speculative: bool,
        enable_metrics: bool,
    ) -> dict[str, Any]:
        completion = len(self.output_ids)
        meta: dict[str, Any] = {
            "id": self.rid,
            "finish_reason": self.finish_reason if finished else None,
            "prompt_tokens": len(self.prompt_ids),
            "weight_version": weight_version,
            "num_retractions": self.num_retractions,
        }
        if enable_metrics and self.admitted_at:
            # scheduler time stats (req_time_stats.py SchedulerReqTimeStats), realtime stamps
            meta["forward_entry_time"] = self._wall(self.admitted_at)
            if self.first_token_at:
                meta["prefill_finished_time"] = self._wall(self.first_token_at)
            meta["queue_time"] = self.admitted_at - self.created
        meta["reasoning_tokens"] = 0
        meta["completion_tokens"] = completion
        meta["cached_tokens"] = self.cached_tokens
        meta["dp_rank"] = self.dp_rank
        if finished:
            meta["e2e_latency"] = (self.finished_at or time.perf_counter()) - self.created
            if speculative and self.verify_ct > 0:
                proposed = self.verify_ct * (draft_tokens - 1)
                if proposed > 0:
                    meta["spec_accept_rate"] = self.correct_drafts / proposed
                    meta["spec_accept_length"] = completion / self.verify_ct
                    meta["spec_num_correct_drafts"] = self.correct_drafts
                    meta["spec_num_proposed_drafts"] = proposed
                    meta["spec_verify_ct"] = self.verify_ct
                if self.histogram:
                    meta["spec_correct_drafts_histogram"] = list(self.histogram)
            if enable_metrics:  # APIServerReqTimeStats.convert_to_output_meta_info
                finished_at = self.finished_at or time.perf_counter()
                meta["request_received_ts"] = self.created_wall
                if self.first_token_at:
                    meta["first_token_latency"] = self.first_token_at - self.created
                meta["api_server_dispatch_finish_ts"] = self.created_wall
                meta["response_sent_to_client_ts"] = self._wall(self.first_token_at or finished_at)
                meta["request_finished_ts"] = self._wall(finished_at)
                decode = finished_at - self.first_token_at
                if self.first_token_at and completion > 1 and decode > 0:
                    meta["decode_throughput"] = (completion - 1) / decode
        meta["simulated"] = True
        return meta
