"""GPU telemetry during a bench level, with NVIDIA's own library (nvidia-ml-py / NVML).

At the level's start and end each GPU's energy counter (`nvmlDeviceGetTotalEnergyConsumption`,
mJ since the driver loaded; Volta and newer) is read; between them a daemon thread samples
power, SM clock, memory used and utilization every `interval_s`. The thread spends its time
in NVML calls that release the GIL, so the client's event loop does not notice it; its own
CPU time is recorded (`sampler_cpu_per_s`). A GPU without the counter gets its joules from
the integrated power samples instead. Without NVML, or when the server runs on another host,
`GpuSampler.stop()` returns None and `why_not` says why: no level fails for lack of readings.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

try:  # optional at run time: a machine without the NVIDIA driver still benchmarks
    import pynvml
except ImportError:  # pragma: no cover - depends on the environment
    pynvml = None

DEFAULT_INTERVAL_S = 0.1
_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0", ""}


@dataclass
class GpuSeries:
    """One GPU's readings over a level."""

    index: int
    name: str
    energy_start_mj: int | None
    energy_end_mj: int | None = None
    t_s: list[float] = field(default_factory=list)
    power_w: list[float] = field(default_factory=list)
    sm_clock_mhz: list[float] = field(default_factory=list)
    memory_used_bytes: list[float] = field(default_factory=list)
    utilization_pct: list[float] = field(default_factory=list)

    def counter_joules(self) -> float | None:
        if self.energy_start_mj is None or self.energy_end_mj is None:
            return None
        return (self.energy_end_mj - self.energy_start_mj) / 1000.0

    def integrated_joules(self, duration_s: float) -> float | None:
        return integrate_power(self.t_s, self.power_w, duration_s)


def integrate_power(t_s: list[float], power_w: list[float], duration_s: float) -> float | None:
    """Joules from power samples at times `t_s` over [0, duration_s]: the trapezoid rule
    between samples, the first and last sample held to the interval's ends."""
    if not power_w:
        return None
    joules = power_w[0] * max(0.0, t_s[0])
    for i in range(1, len(power_w)):
        joules += (power_w[i] + power_w[i - 1]) / 2.0 * (t_s[i] - t_s[i - 1])
    return joules + power_w[-1] * max(0.0, duration_s - t_s[-1])


@dataclass
class Reading:
    """A level's GPU readings: per GPU series, the span they cover and the sampler's cost."""

    gpus: list[GpuSeries]
    duration_s: float
    interval_s: float
    sampler_cpu_s: float


def is_local(url: str) -> bool:
    """Whether the server at `url` runs on this host (whose GPUs NVML sees)."""
    host = (urlsplit(url).hostname or "").lower()
    return host in _LOCAL_HOSTS or host in {socket.gethostname().lower(), socket.getfqdn().lower()}


def nvml_problem() -> str | None:
    """Why NVML cannot be read here; None when it can."""
    if pynvml is None:
        return "no NVML: nvidia-ml-py is not installed"
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return f"no NVML: {exc}"
    try:
        if pynvml.nvmlDeviceGetCount() == 0:
            return "no NVML GPU on this host"
    finally:
        pynvml.nvmlShutdown()
    return None


def _energy_mj(handle: Any) -> int | None:
    try:
        return int(pynvml.nvmlDeviceGetTotalEnergyConsumption(handle))
    except pynvml.NVMLError:  # pre-Volta GPUs and some virtual GPUs lack the counter
        return None


def _read(fn: Any, *args: Any) -> float | None:
    try:
        return float(fn(*args))
    except pynvml.NVMLError:
        return None


class GpuSampler:
    """Samples every NVML GPU of this host from `start()` to `stop()` in a daemon thread."""

    def __init__(self, interval_s: float = DEFAULT_INTERVAL_S, indices: list[int] | None = None):
        self.interval_s = interval_s
        self.indices = indices
        self.why_not: str | None = None
        self._handles: list[Any] = []
        self._series: list[GpuSeries] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self._cpu_s = 0.0

    def start(self) -> bool:
        """Read the energy counters and start sampling; False (with `why_not`) when NVML
        cannot be read."""
        self.why_not = nvml_problem()
        if self.why_not:
            return False
        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        indices = self.indices if self.indices is not None else list(range(count))
        self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in indices]
        self._series = [
            GpuSeries(index=i, name=str(pynvml.nvmlDeviceGetName(h)), energy_start_mj=None)
            for i, h in zip(indices, self._handles, strict=True)
        ]
        self._stop.clear()
        self._t0 = time.perf_counter()
        for series, handle in zip(self._series, self._handles, strict=True):
            series.energy_start_mj = _energy_mj(handle)
        self._thread = threading.Thread(target=self._run, name="gpu-sampler", daemon=True)
        self._thread.start()
        return True

    def stop(self) -> Reading | None:
        """Stop sampling and read the energy counters again; None when nothing was sampled."""
        if self._thread is None:
            return None
        for series, handle in zip(self._series, self._handles, strict=True):
            series.energy_end_mj = _energy_mj(handle)
        duration = time.perf_counter() - self._t0
        self._stop.set()
        self._thread.join()
        self._thread = None
        pynvml.nvmlShutdown()
        return Reading(self._series, duration, self.interval_s, self._cpu_s)

    def _run(self) -> None:
        cpu0 = time.thread_time()
        next_at = time.perf_counter()
        while not self._stop.is_set():
            for series, handle in zip(self._series, self._handles, strict=True):
                self._sample(series, handle)
            next_at += self.interval_s
            self._stop.wait(max(0.0, next_at - time.perf_counter()))
        self._cpu_s = time.thread_time() - cpu0

    def _sample(self, series: GpuSeries, handle: Any) -> None:
        t = time.perf_counter() - self._t0
        power_mw = _read(pynvml.nvmlDeviceGetPowerUsage, handle)
        if power_mw is None:
            return
        series.t_s.append(t)
        series.power_w.append(power_mw / 1000.0)
        clock = _read(pynvml.nvmlDeviceGetClockInfo, handle, pynvml.NVML_CLOCK_SM)
        series.sm_clock_mhz.append(clock or 0.0)
        try:
            series.memory_used_bytes.append(float(pynvml.nvmlDeviceGetMemoryInfo(handle).used))
            series.utilization_pct.append(float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu))
        except pynvml.NVMLError:
            series.memory_used_bytes.append(0.0)
            series.utilization_pct.append(0.0)
