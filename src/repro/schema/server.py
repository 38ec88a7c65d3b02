"""The server's state during each bench level (docs/run-record.md): its effective limits from
`/server_info` and its `/metrics` series, as recorded in `summary.json` and
`levels/c<concurrency>-r<repeat>.metrics.jsonl`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ServerLimits(BaseModel):
    """The server's effective limits as `/server_info` reported them when a level started.

    SGLang reports its resolved arguments there, so a speculative server started without
    `--max-running-requests` says 48 (sglang/srt/arg_groups/speculative_hook.py).
    """

    model_config = ConfigDict(extra="allow")

    max_running_requests: int | None = Field(default=None, description="server_args, all ranks")
    effective_max_running_requests_per_dp: int | None = Field(
        default=None, description="internal_states[0]: what each DP rank's scheduler runs"
    )
    dp_size: int | None = None
    max_total_num_tokens: int | None = Field(default=None, description="KV cache tokens")
    speculative_algorithm: str | None = None
    speculative_num_draft_tokens: int | None = None
    speculative_num_steps: int | None = None
    speculative_eagle_topk: int | None = None
    decode_log_interval: int | None = Field(
        default=None, description="server_args: decode iterations between gauge refreshes"
    )

    @property
    def running_cap(self) -> int | None:
        """Requests the server runs at once (all DP ranks); None when it did not say."""
        if self.effective_max_running_requests_per_dp:
            return self.effective_max_running_requests_per_dp * (self.dp_size or 1)
        return self.max_running_requests or None


class MetricsSample(BaseModel):
    """One scrape of the server's `/metrics` during a level: a line of
    `levels/c<concurrency>-r<repeat>.metrics.jsonl` (gauges summed or averaged over DP ranks)."""

    t_s: float = Field(description="s from the level's start")
    num_running_reqs: float | None = Field(default=None, description="sum over ranks")
    num_queue_reqs: float | None = Field(default=None, description="sum over ranks")
    token_usage: float | None = Field(default=None, description="KV cache in use, 0-1, mean")
    cache_hit_rate: float | None = Field(default=None, description="prefix cache hits, mean")
    gen_throughput: float | None = Field(default=None, description="tok/s, sum over ranks")
    spec_accept_length: float | None = Field(
        default=None, description="the server's last logged acceptance length, mean"
    )


class ServerState(BaseModel):
    """The server during one level: its limits and a summary of its `/metrics` series."""

    limits: ServerLimits | None = Field(default=None, description="None: /server_info failed")
    metrics_available: bool = Field(
        default=False, description="False: no /metrics (started without --enable-metrics)"
    )
    samples: int = Field(default=0, description="scrapes in the level's series")
    mean_running: float | None = None
    max_running: float | None = None
    max_queued: float | None = None
    mean_token_usage: float | None = None
    mean_gen_throughput: float | None = None
    spec_accept_length: float | None = Field(
        default=None, description="mean of the non-zero server-side acceptance samples"
    )
    decode_refreshes: int | None = Field(
        default=None,
        description="scrapes that found the gauges as a decode step set them (a new non-zero "
        "gen_throughput beside at least one running request); None: not counted (an older "
        "record)",
    )


EnergySource = Literal["nvml", "nvml-power-samples", "simulated", "none"]


class GpuEnergy(BaseModel):
    """One GPU's readings over a level (NVML)."""

    index: int = Field(description="NVML device index")
    name: str | None = None
    energy_j: float | None = Field(
        default=None, description="the energy counter's difference; None: the GPU has none"
    )
    integrated_j: float | None = Field(default=None, description="the power samples integrated")
    mean_power_w: float | None = None
    max_power_w: float | None = None
    mean_sm_clock_mhz: float | None = None
    max_memory_used_bytes: float | None = None
    mean_utilization_pct: float | None = None


class LevelEnergy(BaseModel):
    """`summary.json` level `energy`: where the level's energy readings came from and what they
    were, or why there are none."""

    source: EnergySource = Field(
        description="nvml: the GPUs' energy counters; nvml-power-samples: integrated power "
        "samples (GPUs without the counter); simulated: the simulator's power model; none"
    )
    reason: str | None = Field(default=None, description="why no (or only partial) readings")
    gpus: int = Field(default=0, description="GPUs the readings cover")
    energy_j: float | None = Field(default=None, description="joules, all GPUs, over the level")
    mean_power_w: float | None = Field(default=None, description="energy_j / duration, all GPUs")
    max_power_w: float | None = Field(default=None, description="the highest sample, all GPUs")
    duration_s: float | None = Field(default=None, description="s the readings span")
    interval_s: float | None = Field(default=None, description="s between power samples")
    samples: int = Field(default=0, description="power samples per GPU")
    sampler_cpu_per_s: float | None = Field(
        default=None, description="CPU time of the sampler thread per second of the level"
    )
    per_gpu: list[GpuEnergy] = Field(default_factory=list)


class SimClock(BaseModel):
    """`summary.json` level `sim_clock`: whether the simulator kept its own clock during the
    level (its `/repro_sim/clock` read at the level's start and end, sim/clock.py); absent for
    a real server."""

    time_scale: float = Field(description="the simulator's --time-scale (0: no waiting)")
    steps: int = Field(description="forward steps the level ran")
    scheduled_s: float = Field(description="s the profile scheduled for those steps (scaled)")
    behind_s: float = Field(description="s the timeline stretched: the host ran steps late")
    behind_pct: float | None = Field(
        default=None, description="behind_s / scheduled_s x 100; None when nothing was scheduled"
    )
    mean_late_ms: float | None = Field(
        default=None, description="mean ms a step woke after its scheduled end"
    )
    cpu_per_s: float | None = Field(
        default=None, description="the simulator's CPU s per s of the level (1.0: a full core)"
    )
    min_time_scale: float | None = Field(
        default=None, description="the smallest time-scale this host keeps (measured at start)"
    )
