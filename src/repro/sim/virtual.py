"""The simulator's own scheduler and cost model run in virtual time: a prediction, not a run.

`repro campaign plan` needs what a recipe's sweep would measure on a profile without paying
what the sweep costs (a Kimi layout at time-scale 1 takes hours). This runs the very code
`repro sim serve` runs per forward step (`Scheduler._admit`, `prefill_ms`, `decode_ms`,
`_retract_if_full`, `_prefill_done`, `_decode_done`: admission, the KV budget, retraction,
acceptance draws) as a discrete-event simulation: a step's cost advances a virtual clock
instead of being slept, DP ranks run side by side on it, and the closed-loop client of
`repro bench` (warm-up at min(c, warm-up), then n requests with c in flight, `ignore_eos`) is
replayed on the same clock. No HTTP, no sleeping, no text: tokens are counted, not generated
(what the client would do with the text costs the server nothing).

What it does not model: the HTTP and client costs of a real run (sub-millisecond), the
host falling behind (the real simulator's clock check), and prefix hits between prompts.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import random
from dataclasses import dataclass, field

from repro.sim.config import SimConfig
from repro.sim.request import CLIP_MAX_NEW_TOKENS, NEW_TOKEN_RATIO, Req
from repro.sim.scheduler import Scheduler
from repro.sim.tokenizer_manager import TokenizerManager


class VirtualClock:
    """The one clock every scheduler and request of a prediction reads."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class VirtualReq(Req):
    """A request whose tokens are counted, not generated; it keeps its arrival times."""

    __slots__ = ("arrival_tokens", "arrivals", "clock", "n_out")
    arrival_tokens: list[int]  # tokens each arrival carried
    arrivals: list[float]  # virtual times a step handed this request tokens
    clock: VirtualClock
    n_out: int

    def seq_len(self) -> int:
        return len(self.prompt_ids) + self.n_out

    def reserve_left(self) -> int:
        left = min(self.max_new_tokens - self.n_out, CLIP_MAX_NEW_TOKENS)
        return int(max(0, left) * NEW_TOKEN_RATIO)

    def advance(self, n: int, fixed_token: int | None = None) -> int:
        left = self.max_new_tokens - self.n_out
        produced = n if n < left else max(0, left)
        self.n_out += produced
        if produced:
            self.arrivals.append(self.clock.t)
            self.arrival_tokens.append(produced)
        if produced >= left:
            self.finish_reason = {"type": "length", "length": self.max_new_tokens}
            self.finished = True
        return produced


@dataclass(frozen=True)
class VirtualRequest:
    """One request as a streaming client would have seen it (times in seconds)."""

    start_s: float  # from the level's start
    ttft_s: float
    e2e_s: float
    prompt_tokens: int
    completion_tokens: int
    spec_verify_ct: int | None
    chunk_gap_s: list[float]
    chunk_tokens: list[int]


@dataclass
class VirtualLevel:
    concurrency: int
    duration: float  # of the measured requests, from the first sent to the last finished
    requests: list[VirtualRequest] = field(default_factory=list)
    warmup_s: float = 0.0  # the warm-up before them


@dataclass
class _Step:
    """A forward step in flight on one scheduler, ending at `end`."""

    end: float
    rank: int
    prefill: list[Req] | None  # None: a decode step
    new_tokens: int = 0

    def __lt__(self, other: _Step) -> bool:
        return (self.end, self.rank) < (other.end, other.rank)


class VirtualServer:
    """One simulated server (all its DP ranks) on a virtual clock, kept across levels."""

    def __init__(self, cfg: SimConfig, seed: int = 0) -> None:
        self.cfg = cfg
        self.clock = VirtualClock()
        self.manager = TokenizerManager(cfg)
        self.manager.energy = None  # no power model in a prediction
        for scheduler in self.manager.schedulers:
            scheduler.now = self.clock
            scheduler.energy = None
            # unique prompts never hit it; its eviction is the costliest part of a step
            scheduler.cache.enabled = False
        self.rng = random.Random(seed)
        vocab = int(cfg.profile.model.get("vocab_size", 151_936))
        self.vocab_size = vocab
        self.filler = [self.rng.randrange(16, vocab) for _ in range(4096)]
        self._rid = 0

    def run_level(
        self,
        concurrency: int,
        requests: int,
        *,
        input_len: int,
        output_len: int,
        category: str,
        warmup: int = 0,
    ) -> VirtualLevel:
        """Warm-up, then `requests` requests with `concurrency` in flight, as `repro bench`
        sends them; the level's numbers are those of the measured requests only."""
        warming = self.clock.t
        if warmup:
            self._closed_loop(min(concurrency, warmup), warmup, input_len, output_len, category)
        start = self.clock.t
        done = self._closed_loop(concurrency, requests, input_len, output_len, category)
        level = VirtualLevel(concurrency, max(0.0, self.clock.t - start), warmup_s=start - warming)
        for req in done:
            level.requests.append(_as_seen(req, start))
        return level

    # ---- the closed loop -------------------------------------------------------------------
    def _new_request(self, input_len: int, output_len: int, category: str) -> VirtualReq:
        self._rid += 1
        # unique from the first token on, so no two prompts share a cached prefix
        head = [16 + self._rid % (self.vocab_size - 16)]
        filler = self.filler * (1 + input_len // len(self.filler))
        base = self.manager.new_request(
            self.manager.prompt_from_ids(head + filler[: input_len - 1]),
            {"max_new_tokens": output_len, "ignore_eos": True, "temperature": 0.0},
            stream=True,
            event=_NO_EVENT,
            rid=f"v{self._rid}",
            log_metrics=False,
            classify_text="",  # the category is the bench's dataset's, set below
        )
        req = VirtualReq.__new__(VirtualReq)
        for name in Req.__slots__:
            setattr(req, name, getattr(base, name))
        req.category = category  # what the bench's dataset is, not what random ids look like
        req.accept_cdf = self.cfg.accept_cdf_for(category, len(req.prompt_ids))
        req.created = self.clock.t
        req.arrivals = []
        req.arrival_tokens = []
        req.n_out = 0
        req.clock = self.clock
        return req

    def _closed_loop(
        self, concurrency: int, total: int, input_len: int, output_len: int, category: str
    ) -> list[VirtualReq]:
        schedulers = self.manager.schedulers
        in_flight: list[VirtualReq] = []
        finished: list[VirtualReq] = []
        sent = 0
        steps: list[_Step] = []
        busy = [False] * len(schedulers)
        while len(finished) < total:
            while sent < total and len(in_flight) < concurrency:
                req = self._new_request(input_len, output_len, category)
                self.manager.submit(req)
                in_flight.append(req)
                sent += 1
            for rank, scheduler in enumerate(schedulers):
                if not busy[rank]:
                    step = self._start_step(rank, scheduler)
                    if step is not None:
                        busy[rank] = True
                        heapq.heappush(steps, step)
            if not steps:
                raise RuntimeError("virtual run stalled: requests wait and no step can run")
            step = heapq.heappop(steps)
            self.clock.t = step.end
            busy[step.rank] = False
            scheduler = schedulers[step.rank]
            stepped = list(scheduler.running)
            if step.prefill is not None:
                scheduler._prefill_done(step.prefill, step.new_tokens)
            else:
                scheduler._decode_done()
            done = [req for req in stepped if req.finished]
            if done:
                finished.extend(done)  # type: ignore[arg-type]
                in_flight = [req for req in in_flight if not req.finished]
        return finished

    def _start_step(self, rank: int, scheduler: Scheduler) -> _Step | None:
        if scheduler.is_idle():
            return None
        batch, new_tokens = scheduler._admit()
        if batch:
            ms = scheduler.prefill_ms(new_tokens)
            return _Step(self.clock.t + ms / 1000.0, rank, batch, new_tokens)
        if scheduler.running:
            scheduler._retract_if_full()
            ms = scheduler.decode_ms(len(scheduler.running))
            return _Step(self.clock.t + ms / 1000.0, rank, None)
        return None


def _as_seen(req: VirtualReq, level_start: float) -> VirtualRequest:
    gaps = [b - a for a, b in itertools.pairwise(req.arrivals)]
    return VirtualRequest(
        start_s=req.created - level_start,
        ttft_s=req.first_token_at - req.created,
        e2e_s=req.finished_at - req.created,
        prompt_tokens=len(req.prompt_ids),
        completion_tokens=req.n_out,
        spec_verify_ct=req.verify_ct or None,
        chunk_gap_s=gaps,
        chunk_tokens=req.arrival_tokens[1:],
    )


_NO_EVENT = asyncio.Event()  # set by the scheduler as a token arrives; nothing awaits it here
