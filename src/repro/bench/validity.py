"""The validity verdict of a level: do its numbers measure the server as configured?

A level is invalid, with one reason per failed check, when it produced no output tokens; when
more than `max_failed_pct` percent of its requests failed; when its offered concurrency is
above the server's running-request cap (the level then measures a queue: a speculative SGLang
server started without `--max-running-requests` runs at most 48,
sglang/srt/arg_groups/speculative_hook.py); when the server's own `/metrics` never showed
the offered load running (judged only when the level was long enough for SGLang to refresh
that gauge a few times, and the scrapes saw it refreshed: SGLang sets it on prefill batches
and every `decode_log_interval` decode iterations,
srt/managers/scheduler_components/metrics_reporter.py, so a short level, or scrapes a loaded
host delays past the refreshes, read a stale gauge: its peak is unknown, never low); when
the client's acceptance disagrees with the server's `sglang:spec_accept_length`; when the
client itself was near saturation (its timings then include its own queueing); or when a
simulator fell behind its own clock (sim/clock.py: the numbers then measure the host, not
the profile); and, for an open-loop level (a rate or a trace), when the client sent
behind the schedule: its p99 send lag above a bound, or its achieved rate below its offered
rate (the cap or the client queued the requests: the level measures a lower rate than
offered).
"""

from __future__ import annotations

from repro.schema.level import Arrival, Level

DEFAULT_MAX_FAILED_PCT = 1.0
RUNNING_SHARE = 0.5
"""The server must have run at least this share of the offered load at some scrape..."""
MIN_SAMPLES = 5
"""...of at least this many scrapes (fewer cover too little of a level to judge it)."""
ACCEPT_TOLERANCE = 0.25
"""Client and server acceptance may differ by this fraction of the server's."""
CLIENT_CPU_LIMIT = 0.9
"""CPU seconds per second of the level above which the client counts as saturated."""
SIM_BEHIND_PCT = 5.0
"""A simulator's timeline may stretch by this percentage of its scheduled time."""
DEFAULT_DECODE_LOG_INTERVAL = 40
"""SGLang's default `--decode-log-interval` (srt/arg_groups/fields/observability.py)."""
MIN_GAUGE_REFRESHES = 3
"""Decode-time refreshes of the running gauge a level must have had for its peak to count..."""
MIN_SEEN_REFRESHES = 2
"""...and how many of them the scrapes must have seen (a gauge never seen refreshed is stale:
on a busy host the scrapes can all land before, between the same two, or after them)."""
SEND_LAG_FLOOR_MS = 50.0
"""An open-loop level's sends may be this late at p99, or one mean offered gap if longer
(later than that, a request that should have been in flight was still queued)..."""
ACHIEVED_RATE_SHARE = 0.9
"""...and must have reached this share of the schedule's own rate."""


def offered_load(level: Level, prompts: int, closed_loop: bool) -> int | None:
    """Requests in flight the level asked for: its concurrency, at most its requests;
    None for Poisson arrivals, whose load the arrival rate sets."""
    return min(level.concurrency, prompts) if closed_loop else None


def gauge_refreshes(level: Level, offered: int) -> int:
    """A lower bound on the decode-time refreshes of SGLang's gauges during `level`.

    Each decode iteration gives every running request at most one token (with speculative
    decoding at most `speculative_num_draft_tokens`), so `offered` requests producing the
    level's output took at least `tokens / (offered * per_step)` iterations, and the gauges
    were set every `decode_log_interval` of them.
    """
    limits = level.server.limits if level.server is not None else None
    interval = (limits.decode_log_interval if limits else None) or DEFAULT_DECODE_LOG_INTERVAL
    per_step = max(1, (limits.speculative_num_draft_tokens if limits else None) or 1)
    iterations = level.total_output_tokens // (max(1, offered) * per_step)
    return iterations // max(1, interval)


def judge(level: Level, *, offered: int | None, max_failed_pct: float) -> list[str]:
    """Why `level` is invalid; empty when it is valid."""
    reasons: list[str] = []
    sent = level.completed + level.failed
    if level.total_output_tokens == 0:
        reasons.append("no output tokens")
    if sent and level.failed * 100.0 / sent > max_failed_pct:
        reasons.append(
            f"{level.failed} of {sent} requests failed "
            f"({level.failed * 100.0 / sent:.1f}% > {max_failed_pct:g}%)"
        )
    server = level.server
    cap = server.limits.running_cap if server is not None and server.limits else None
    if level.arrival is not None:  # open loop: its cap, when it has one, is the most it offers
        load = level.arrival.max_concurrency
    else:
        load = offered if offered is not None else level.concurrency
    if cap is not None and load is not None and load > cap:
        reasons.append(
            f"concurrency {load} is above the server's max_running_requests {cap}: "
            "the level measures a queue"
        )
    peak = server.max_running if server is not None else None
    if (
        offered is not None
        and peak is not None
        and server is not None
        and server.samples >= MIN_SAMPLES
        and gauge_refreshes(level, offered) >= MIN_GAUGE_REFRESHES
        and (server.decode_refreshes or 0) >= MIN_SEEN_REFRESHES
    ):
        expected = min(offered, cap) if cap else offered
        if peak < RUNNING_SHARE * expected:
            reasons.append(
                f"the server ran at most {peak:g} requests while {expected} were offered"
            )
    server_accept = server.spec_accept_length if server is not None else None
    client_accept = level.accept_length
    if (
        client_accept is not None
        and server_accept
        and abs(client_accept - server_accept) > ACCEPT_TOLERANCE * server_accept
    ):
        reasons.append(
            f"acceptance {client_accept:.2f} (pooled, from the requests) disagrees "
            f"with the server's spec_accept_length {server_accept:.2f}"
        )
    if level.client_cpu_per_s is not None and level.client_cpu_per_s > CLIENT_CPU_LIMIT:
        reasons.append(
            f"the client used {level.client_cpu_per_s:.2f} CPU s per s: near saturation, "
            "its timings include its own delays"
        )
    if level.arrival is not None:
        reasons += schedule_reasons(level.arrival)
    clock = level.sim_clock
    if clock is not None and clock.behind_pct is not None and clock.behind_pct > SIM_BEHIND_PCT:
        cpu = f", its CPU {clock.cpu_per_s:.2f} s per s" if clock.cpu_per_s is not None else ""
        floor = (
            f"; this host keeps time-scale {clock.min_time_scale:.2g} or more"
            if clock.min_time_scale and clock.min_time_scale > clock.time_scale
            else ""
        )
        reasons.append(
            f"the simulator fell behind its clock by {clock.behind_pct:.0f}% at time-scale "
            f"{clock.time_scale:g}{cpu}{floor}: the level measures this host, not the profile"
        )
    return reasons


def schedule_reasons(arrival: Arrival) -> list[str]:
    """Why an open-loop level did not send what it offered: late sends, a low achieved rate."""
    reasons: list[str] = []
    offered = arrival.offered_rate
    bound = max(SEND_LAG_FLOOR_MS, 1000.0 / offered if offered else 0.0)
    late = arrival.send_lag_p99_ms
    cap = f" (cap {arrival.max_concurrency} in flight)" if arrival.max_concurrency else ""
    if late is not None and late > bound:
        reasons.append(
            f"sends fell behind the schedule: p99 {late:.0f} ms late (bound {bound:.0f} ms)"
            f"{cap}: the requests queued in the client"
        )
    achieved = arrival.achieved_rate
    if offered and achieved is not None and achieved < ACHIEVED_RATE_SHARE * offered:
        reasons.append(
            f"sent {achieved:.2f} req/s of the {offered:.2f} offered{cap}: the level "
            "measures a lower rate"
        )
    return reasons
