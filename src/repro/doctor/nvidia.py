"""Reading `nvidia-smi`: the GPU query, the `topo -m` matrix and the banner's CUDA version.

Parsers take the text nvidia-smi printed; `collect_nvidia` runs the executable through a
`Runner` and never raises for a machine problem: what it could not read lands in `problems`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from repro.doctor.arch import arch_for_name, normalize_arch
from repro.doctor.models import CapSource, GpuAffinity, GpuInfo, TopoMatrix
from repro.doctor.runner import Runner
from repro.errors import ReproError

QUERY_FIELDS = ("index", "name", "uuid", "pci.bus_id", "memory.total", "driver_version")
QUERY_FIELDS_WITH_CC = (*QUERY_FIELDS, "compute_cap")
QUERY_FORMAT = "--format=csv,noheader,nounits"
TIMEOUT_S = 30.0

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_DEVICE = re.compile(r"GPU\d+|NIC\d+")
_HEADER_TOKEN = re.compile(r"GPU\d+|NIC\d+|CPU Affinity|NUMA Affinity|GPU NUMA ID")
# Cells of the matrix; SOC is what drivers before 375 printed for SYS.
_CELL = re.compile(r"NV\d+|NODE|PIX|PXB|PHB|SYS|SOC|X")
_ROW_LABEL = re.compile(r"^(GPU\d+|NIC\d+)\s*$")
_NIC_LEGEND = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_MISSING = {"", "N/A", "[N/A]", "[Not Supported]", "Not Supported", "[Unknown Error]"}


class NvidiaSmiParseError(ReproError):
    """nvidia-smi printed something this parser does not understand."""


def _value(text: str) -> str | None:
    text = text.strip()
    return None if text in _MISSING else text


def parse_query_gpu(text: str, with_compute_cap: bool = True) -> list[GpuInfo]:
    """Rows of `--query-gpu=index,name,uuid,pci.bus_id,memory.total,driver_version[,compute_cap]`.

    Extra trailing columns are ignored. Without compute_cap (old drivers) the architecture is
    taken from the GPU name table (`compute_cap_source="name-table"`).
    """
    wanted = len(QUERY_FIELDS_WITH_CC if with_compute_cap else QUERY_FIELDS)
    gpus: list[GpuInfo] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cols = [c.strip() for c in line.split(",")]
        if len(cols) < wanted or not cols[0].isdigit():
            raise NvidiaSmiParseError(
                f"nvidia-smi --query-gpu line {lineno} has {len(cols)} fields, expected "
                f"{wanted} ({', '.join(QUERY_FIELDS_WITH_CC[:wanted])}): {line.strip()!r}",
                hint="run that nvidia-smi command by hand; driver errors print text, not CSV",
            )
        memory = _value(cols[4])
        name = cols[1]
        reported = _value(cols[6]) if with_compute_cap else None
        cap, source = _compute_cap(reported, name)
        gpus.append(
            GpuInfo(
                index=int(cols[0]),
                name=name,
                uuid=_value(cols[2]),
                pci_bus_id=_value(cols[3]),
                memory_total_mib=int(float(memory)) if memory else None,
                driver_version=_value(cols[5]),
                compute_cap=cap,
                compute_cap_source=source,
            )
        )
    return gpus


def _compute_cap(reported: str | None, name: str) -> tuple[str | None, CapSource]:
    if reported:
        try:
            return normalize_arch(reported), "nvidia-smi"
        except ValueError:
            pass
    derived = arch_for_name(name)
    return (derived, "name-table") if derived else (None, "unknown")


def _split_run_together(token: str, pattern: re.Pattern[str]) -> list[str] | None:
    """["NIC11", "NIC12"] for "NIC11NIC12" (also with spaces); None if `token` is not such a run."""
    parts = pattern.findall(token)
    return parts if parts and "".join(parts) == re.sub(r"\s+", "", token) else None


def parse_topo(text: str) -> TopoMatrix:
    """The matrix of `nvidia-smi topo -m`: tabs, ANSI codes, NIC rows/columns and legend."""
    lines = [_ANSI.sub("", line).rstrip("\r\n") for line in text.splitlines()]
    header_at = next(
        (
            i
            for i, line in enumerate(lines)
            if "\t" in line
            and _DEVICE.search(line)
            and not _ROW_LABEL.match(line.split("\t", 1)[0])
        ),
        None,
    )
    if header_at is None:
        raise NvidiaSmiParseError(
            "no device header (GPU0 ...) in the output of `nvidia-smi topo -m`",
            hint="run `nvidia-smi topo -m` by hand; the driver may not be loaded",
        )
    devices: list[str] = []
    extra_columns: list[str] = []
    for raw in lines[header_at].split("\t"):
        token = raw.strip()
        if not token:
            continue
        parts = _split_run_together(token, _HEADER_TOKEN) or [token]
        for part in parts:
            if _DEVICE.fullmatch(part):
                devices.append(part)
            else:
                extra_columns.append(part)

    matrix: dict[str, dict[str, str]] = {}
    affinity: dict[str, GpuAffinity] = {}
    for line in lines[header_at + 1 :]:
        if not line.strip():
            if matrix:
                break
            continue
        label, _, rest = line.partition("\t")
        if not _ROW_LABEL.match(label):
            break
        label = label.strip()
        cells, leftovers = _row_cells(rest.split("\t"), len(devices), label)
        matrix[label] = dict(zip(devices, cells, strict=True))
        if label.startswith("GPU"):
            affinity[label] = _affinity(extra_columns, leftovers)

    nics: dict[str, str] = {}
    for line in lines:
        match = _NIC_LEGEND.match(line)
        if match:
            nics[match.group(1)] = match.group(2)
    missing = [d for d in devices if d.startswith("GPU") and d not in matrix]
    if missing:
        raise NvidiaSmiParseError(f"`nvidia-smi topo -m` has no row for {', '.join(missing)}")
    return TopoMatrix(devices=devices, matrix=matrix, affinity=affinity, nics=nics)


def _row_cells(raw_cells: list[str], n_devices: int, label: str) -> tuple[list[str], list[str]]:
    """Split one row into its `n_devices` matrix cells and the affinity values after them."""
    cells: list[str] = []
    rest = iter(raw_cells)
    for raw in rest:
        token = raw.strip()
        if not token:
            continue
        parts = _split_run_together(token, _CELL)
        if parts is None:
            raise NvidiaSmiParseError(
                f"`nvidia-smi topo -m` row {label}: unknown cell {token!r} "
                f"after {len(cells)} of {n_devices} devices"
            )
        cells.extend("SYS" if p == "SOC" else p for p in parts)
        if len(cells) >= n_devices:
            break
    if len(cells) != n_devices:
        raise NvidiaSmiParseError(
            f"`nvidia-smi topo -m` row {label} has {len(cells)} cells for {n_devices} devices"
        )
    return cells, [c.strip() for c in rest if c.strip()]


def _affinity(columns: list[str], values: list[str]) -> GpuAffinity:
    # nvidia-smi prints an empty cell between "NUMA Affinity" and "GPU NUMA ID" on some drivers
    # (see the H200 capture), so empty cells are dropped before pairing values with columns.
    by_name = {col: _value(val) for col, val in zip(columns, values, strict=False)}
    return GpuAffinity(
        cpu_affinity=by_name.get("CPU Affinity"),
        numa_affinity=by_name.get("NUMA Affinity"),
        gpu_numa_id=by_name.get("GPU NUMA ID"),
    )


def parse_banner(text: str) -> tuple[str | None, str | None]:
    """(driver version, CUDA version) from the banner of plain `nvidia-smi`."""
    driver = re.search(r"Driver Version:\s*([\d.]+)", text)
    cuda = re.search(r"CUDA Version:\s*([\d.]+)", text)
    return (driver.group(1) if driver else None, cuda.group(1) if cuda else None)


@dataclass
class NvidiaInventory:
    """What `nvidia-smi` told us; `problems` says what could not be read, and why."""

    executable: str | None
    gpus: list[GpuInfo] = field(default_factory=list)
    topology: TopoMatrix | None = None
    driver_version: str | None = None
    cuda_version: str | None = None
    problems: list[str] = field(default_factory=list)


def collect_nvidia(executable: str | None, runner: Runner) -> NvidiaInventory:
    """Query GPUs, topology and versions with `executable`; None means nvidia-smi is absent."""
    inv = NvidiaInventory(executable=executable)
    if executable is None:
        return inv
    query = runner(
        [executable, f"--query-gpu={','.join(QUERY_FIELDS_WITH_CC)}", QUERY_FORMAT], TIMEOUT_S
    )
    with_cc = True
    if not query.ok and "compute_cap" in query.stdout + query.stderr:
        # Drivers before compute_cap existed say: Field "compute_cap" is not a valid field to query.
        with_cc = False
        query = runner(
            [executable, f"--query-gpu={','.join(QUERY_FIELDS)}", QUERY_FORMAT], TIMEOUT_S
        )
    if not query.ok:
        inv.problems.append(query.describe_failure())
        return inv
    try:
        inv.gpus = parse_query_gpu(query.stdout, with_compute_cap=with_cc)
    except NvidiaSmiParseError as err:
        inv.problems.append(err.message)
        return inv
    if not with_cc:
        inv.problems.append(
            "this driver does not report compute_cap; architectures come from the GPU name table"
        )

    banner = runner([executable], TIMEOUT_S)
    if banner.ok:
        inv.driver_version, inv.cuda_version = parse_banner(banner.stdout)
    else:
        inv.problems.append(banner.describe_failure())
    if inv.driver_version is None and inv.gpus:
        inv.driver_version = inv.gpus[0].driver_version

    if inv.gpus:
        topo = runner([executable, "topo", "-m"], TIMEOUT_S)
        if not topo.ok:
            inv.problems.append(topo.describe_failure())
        else:
            try:
                inv.topology = parse_topo(topo.stdout)
            except NvidiaSmiParseError as err:
                inv.problems.append(err.message)
    return inv
