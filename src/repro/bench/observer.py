"""One level, observed and judged: what the server said while the level ran is gathered once
(`LevelObserver.watch`: the `/metrics` series, the energy and simulator-clock counters, the
client's CPU time, and one `/server_info` read after the level for its limits, its acceptance
and its identity), and the level's record is built once from it (`build_level`), validated,
with its verdict: validity.py's checks plus every server-reported number the protocol does not
allow (repro.bench.plausible), each named.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from dataclasses import dataclass, field

from repro.bench.arrivals import ArrivalPlan, kept_schedule
from repro.bench.client.result import RequestResult
from repro.bench.client.stream import LevelRun
from repro.bench.energy import LevelMeter, usd_per_mtok
from repro.bench.metrics import summarize_level
from repro.bench.plausible import acceptance_problem
from repro.bench.server import server_accept_length
from repro.bench.serverstate import MetricsScraper, server_limits, server_state
from repro.bench.session import ServerChanged, ServerSession
from repro.bench.simclock import SimClockMeter
from repro.bench.validity import judge, offered_load
from repro.errors import ReproError
from repro.schema.level import Arrival, Level
from repro.schema.server import LevelEnergy, MetricsSample, SimClock
from repro.schema.serverinfo import ServerInfo


@dataclass
class Observation:
    """Everything one level's record is made of."""

    run: LevelRun
    cpu_s: float
    samples: list[MetricsSample]
    metrics_available: bool
    sim_clock: SimClock | None
    energy: LevelEnergy
    info: ServerInfo | None  # after the level; None when the server did not answer
    problems: list[str] = field(default_factory=list)  # impossible numbers, named


@dataclass(frozen=True)
class LevelPlan:
    """What a level was asked to be, and what judging it needs of the run."""

    concurrency: int
    repeat: int
    prompts: int
    arrival: ArrivalPlan | None  # None: closed loop
    gpus: int = 0
    slos: dict[str, float] | None = None
    max_failed_pct: float = 1.0
    gpu_hour_usd: float | None = None


class LevelObserver:
    """Watches each level of a run through the run's session."""

    def __init__(self, session: ServerSession, metrics_interval: float) -> None:
        self.session = session
        self.metrics_interval = metrics_interval

    async def watch(self, level: Awaitable[LevelRun]) -> Observation:
        """Await `level` (its requests) with the server's series and counters around it.
        `ServerChanged` when the server reports another deployment afterwards."""
        scraper = MetricsScraper(self.session, self.metrics_interval)
        scraper.start()
        meter = LevelMeter(self.session)
        await meter.start()
        clock = SimClockMeter(self.session)
        await clock.start()
        cpu0 = time.process_time()
        run = await level
        cpu = time.process_time() - cpu0
        sim_clock = await clock.stop()
        energy = await meter.stop()
        samples = await scraper.stop()
        try:
            info: ServerInfo | None = await self.session.server_info()
        except ServerChanged:
            raise
        except ReproError:  # a dead server: the level's own failures say why
            info = None
        problems = [p for p in (scraper.problem, clock.problem) if p]
        return Observation(run, cpu, samples, scraper.available, sim_clock, energy, info, problems)


def implausible_reason(results: list[RequestResult]) -> str | None:
    """Why a level whose server sent malformed responses or values no server can send is
    invalid, however few."""
    bad = [r for r in results if r.error_kind in ("implausible", "protocol")]
    if not bad:
        return None
    return (
        f"{len(bad)} of {len(results)} responses were malformed or held values no server "
        f"can send (first: {bad[0].error})"
    )


def _add_energy(level: Level, energy: LevelEnergy, plan: LevelPlan) -> None:
    """The level's energy, joules per output token and dollars per Mtok (the recipe's GPU
    count, else the GPUs the readings cover)."""
    tokens, joules = level.total_output_tokens, energy.energy_j
    level.energy = energy
    level.joules_per_output_token = joules / tokens if joules is not None and tokens else None
    level.mean_power_w = energy.mean_power_w
    level.usd_per_mtok = usd_per_mtok(
        plan.gpus or energy.gpus, plan.gpu_hour_usd, level.output_throughput
    )


def _arrival(results: list[RequestResult], plan: ArrivalPlan | None) -> Arrival | None:
    """An open-loop level's schedule as kept: offered against actual send times."""
    if plan is None:
        return None
    sent = [(r.offered_s, r.start_s) for r in results if r.offered_s is not None]
    return kept_schedule(plan, [o for o, _ in sent], [s for _, s in sent])


def build_level(seen: Observation, plan: LevelPlan) -> Level:
    """The level's record, built once: the requests' numbers, the server's state, the client's
    CPU, energy and clock, and the verdict."""
    info, run = seen.info, seen.run
    problems = list(seen.problems)
    accept = server_accept_length(info) if info is not None else None
    draft_tokens = info.speculative_num_draft_tokens if info is not None else None
    wrong = acceptance_problem(accept, draft_tokens, "the server's avg_spec_accept_length")
    if wrong:
        problems.append(wrong)
        accept = None
    level = summarize_level(
        run.results, concurrency=plan.concurrency, repeat=plan.repeat, duration=run.duration,
        gpus=plan.gpus, slos=plan.slos, server_accept_length=accept,
    )  # fmt: skip
    state = server_state(
        server_limits(info) if info is not None else None, seen.samples, seen.metrics_available
    )
    wrong = acceptance_problem(state.spec_accept_length, draft_tokens, "sglang:spec_accept_length")
    if wrong:
        problems.append(wrong)
    duration = run.duration
    level.server = state
    level.client_cpu_s = seen.cpu_s
    level.client_cpu_per_s = seen.cpu_s / duration if duration > 0 else None
    level.sim_clock = seen.sim_clock
    level.arrival = _arrival(run.results, plan.arrival)
    _add_energy(level, seen.energy, plan)
    offered = offered_load(level, plan.prompts, plan.arrival is None)
    implausible = implausible_reason(run.results)
    level.reasons = judge(level, offered=offered, max_failed_pct=plan.max_failed_pct) + [
        p for p in (implausible, *problems) if p
    ]
    level.valid = not level.reasons
    return level
