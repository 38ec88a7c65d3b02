"""`repro doctor [RECIPE] [--json]`: check this machine, optionally against a recipe."""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.table import Table

from repro.cli.options import json_option
from repro.doctor import DoctorReport, MachineFingerprint, run_doctor
from repro.lock import load_locked
from repro.recipe.placeholder import locked_placeholder
from repro.units import human_bytes

_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red"}


@click.command("doctor")
@click.argument("recipe", required=False)
@json_option("fingerprint and findings")
@click.option(
    "--probe",
    is_flag=True,
    help="Also measure all-reduce bus bandwidth (1 MiB to 1 GiB, NCCL, one process per GPU) "
    "across the recipe's GPUs; kept in the machine fingerprint of every later run.",
)
@click.option(
    "--probe-image",
    metavar="IMAGE",
    help="Run the probe inside this image (it has torch and NCCL); default: the lock's image "
    "when RECIPE is locked and built, else the host's torch.",
)
@click.pass_context
def doctor(
    ctx: click.Context, recipe: str | None, as_json: bool, probe: bool, probe_image: str | None
) -> None:
    """Check this machine (GPUs, topology, engine, disk) against a recipe.

    Without RECIPE, reports the machine: GPUs, NVLink/PCIe/NUMA layout, driver and CUDA,
    Docker's GPU runtime, free disk where the Hub cache lives. With RECIPE (a name, a recipe
    file or a lock) also checks GPU count, model, memory, interconnect, the image's GPU
    architectures and disk for the weights. Exits 1 when any check fails.

    --probe measures what the interconnect class cannot tell: whether P2P works and how
    fast an all-reduce is (nccl-tests' busbw), before a 600 GB weight load. NVLink multicast
    stays off during it (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
    NVSHMEM_DISABLE_NVLS=1).
    """
    locked = load_locked(recipe) if recipe is not None else None
    report = run_doctor(locked, probe=probe or probe_image is not None, probe_image=probe_image)
    if as_json:
        payload = {"recipe": recipe, **report.model_dump(mode="json")}
        click.echo(json.dumps(payload, indent=2))
    else:
        _print(report, Console(highlight=False))
    placeholder = locked_placeholder(locked) if locked is not None else None
    if placeholder is not None:  # not the machine's to fix, but nothing runs until it is
        click.echo(f"note: {placeholder}", err=as_json)
    ctx.exit(0 if report.ok else 1)


def _print(report: DoctorReport, console: Console) -> None:
    fp = report.fingerprint
    _print_inventory(fp, console)
    table = Table(
        title="Checks"
        + (
            f" against {report.requirements.source}"
            if report.requirements and report.requirements.source
            else ""
        ),
        title_justify="left",
    )
    for column in ("check", "status", "finding", "fix"):
        table.add_column(column, overflow="fold")
    for f in report.findings:
        table.add_row(f.check, f"[{_STYLE[f.status]}]{f.status}[/]", f.message, f.fix or "")
    console.print(table)
    probe = fp.interconnect_probe
    if probe is not None:
        console.print(f"[bold]Interconnect probe[/] ({probe.where or 'not run'}): {probe.message}")
        if probe.points:
            sizes = Table(title_justify="left")
            for column in ("size", "time", "algbw", "busbw"):
                sizes.add_column(column, justify="right")
            for point in probe.points:
                sizes.add_row(
                    human_bytes(point.size_bytes),
                    f"{point.time_us:,.1f} us",
                    f"{point.algbw_gbps:,.2f} GB/s",
                    f"{point.busbw_gbps:,.2f} GB/s",
                )
            console.print(sizes)
    advice = report.nccl
    if advice.env or advice.server_args or advice.notes:
        console.print(f"[bold]NCCL / SGLang for {advice.interconnect.label}[/]")
        for key, value in advice.env.items():
            console.print(f"  env {key}={value}")
        for arg in advice.server_args:
            console.print(f"  server flag {arg}")
        for note in advice.notes:
            console.print(f"  - {note}")
    failed = sum(f.status == "fail" for f in report.findings)
    console.print(
        "[green]all checks passed[/]" if report.ok else f"[bold red]{failed} check(s) failed[/]"
    )


def _print_inventory(fp: MachineFingerprint, console: Console) -> None:
    console.print(
        f"[bold]{fp.hostname}[/]  kernel {fp.kernel}  {fp.cpu_count} CPUs ({fp.cpu_model or '?'})"
        f"  NUMA nodes {fp.numa_nodes or '?'}\n"
        f"driver {fp.driver_version or '-'}  CUDA {fp.cuda_version or '-'}  "
        f"Docker {fp.docker.server_version or 'unavailable'}  "
        f"interconnect: {fp.interconnect.value} ({fp.interconnect.label})"
    )
    if not fp.gpus:
        return
    gpus = Table(title="GPUs", title_justify="left")
    for column in ("#", "name", "memory", "arch", "bus id", "NUMA", "CPU affinity"):
        gpus.add_column(column)
    topo = fp.topology
    for g in fp.gpus:
        aff = topo.affinity.get(f"GPU{g.index}") if topo else None
        cap = (g.compute_cap or "?") + ("*" if g.compute_cap_source == "name-table" else "")
        gpus.add_row(
            str(g.index),
            g.short_name,
            f"{g.memory_total_mib} MiB" if g.memory_total_mib else "?",
            cap,
            g.pci_bus_id or "?",
            (aff.numa_affinity if aff else None) or "-",
            (aff.cpu_affinity if aff else None) or "-",
        )
    console.print(gpus)
    if topo is not None and len(topo.gpu_indices) > 1:
        matrix = Table(title="GPU links (nvidia-smi topo -m)", title_justify="left")
        names = [d for d in topo.devices if d.startswith("GPU")]
        matrix.add_column("")
        for name in names:
            matrix.add_column(name)
        for row in names:
            matrix.add_row(row, *(topo.matrix[row][col] for col in names))
        console.print(matrix)
    if topo is not None and topo.nics:
        console.print("NICs: " + ", ".join(f"{k}={v}" for k, v in topo.nics.items()))
