"""A Slurm batch script running the recipe with pyxis/enroot, pinned to the image digest.

One task per node (`srun --ntasks-per-node=1`), each in the container pyxis creates from
`--container-image` (a registry reference in enroot's form, or a squashfs made by
`repro image export --format enroot`), with the Hub cache mounted. The per-node options are
expanded by each task, not by the batch shell: the server command is the single-quoted
argument of `bash -c`, so `$SLURM_NODEID` is read from the task's own environment (0 on the
first node of the allocation, 1 on the next...), and `$MASTER_ADDR`, the allocation's first
host, is exported by the batch shell once and inherited by every task. A locked recipe's
server runs with the Hub offline, so a first step on every node downloads the pinned files
into the mounted Hub cache.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from repro.export.common import (
    DEFAULT_DIST_PORT,
    HF_TOKEN,
    HUB_CACHE_IN_CONTAINER,
    Prepared,
    prepare,
)
from repro.export.image import ExportError
from repro.recipe import LAUNCH
from repro.schema.lock import HUB_OFFLINE_ENV, Locked
from repro.shellquote import comment, has_control, word

NODE_RANK = "$SLURM_NODEID"  # set by slurmstepd per task: the node's index in the job
MASTER_ADDR = "$MASTER_ADDR"
_RANK_TOKEN = "@@repro-node-rank@@"
_ADDR_TOKEN = "@@repro-dist-init-addr@@"
_SBATCH_VALUE = re.compile(r"^[A-Za-z0-9_.:,+=@/-]{1,200}$")


@dataclass(frozen=True)
class SlurmOptions:
    image: str | None = None  # REPOSITORY@sha256:..., overrides the lock
    squashfs: str | None = None  # an enroot squashfs on a shared filesystem, instead
    hub_cache: str | None = None  # host directory of the Hub cache (default ~/.cache/...)
    partition: str | None = None
    account: str | None = None
    time: str | None = None
    job_name: str | None = None
    dist_port: int = DEFAULT_DIST_PORT
    # What runs the server argv inside the container; tests put a stand-in here.
    launcher: Sequence[str] = LAUNCH
    python: str = "python3"  # runs the weights pre-fill inside the container
    # False: the launcher runs on the node itself, in no container (the simulator, which is
    # part of repro's own install there)
    container: bool = True


def sbatch_line(option: str, value: str | int | None) -> list[str]:
    """`#SBATCH --option=value` (none for None); a value with other characters is refused."""
    if value is None:
        return []
    text = str(value)
    if not _SBATCH_VALUE.match(text):
        raise ExportError(f"--{option} {text!r}: unexpected characters for an #SBATCH line")
    return [f"#SBATCH --{option}={text}"]


def _inner_command(p: Prepared, opts: SlurmOptions) -> str:
    """The server command as `bash -c` runs it in each task, one option per line."""
    argv = p.argv(node_rank=_RANK_TOKEN, dist_init_addr=_ADDR_TOKEN)
    raw = {_RANK_TOKEN: f'"{NODE_RANK}"', _ADDR_TOKEN: f'"{MASTER_ADDR}:{opts.dist_port}"'}
    groups: list[list[str]] = [["exec", *(word(t) for t in opts.launcher)]]
    for token in argv:
        quoted = raw.get(token) or word(token)
        if token.startswith("--") or len(groups) == 1:
            groups.append([quoted])
        else:
            groups[-1].append(quoted)
    return " \\\n    ".join(" ".join(g) for g in groups)


def _container_image(p: Prepared, opts: SlurmOptions) -> tuple[str, str]:
    """The --container-image value and the comment saying what it is."""
    if opts.squashfs:
        path = opts.squashfs
        if (
            not path.startswith("/")
            or not path.endswith((".sqsh", ".squashfs"))
            or has_control(path)
        ):
            raise ExportError(
                f"--squashfs {path!r}: expected an absolute path to a .sqsh file "
                "(no control characters)",
                hint="make one with `repro image export IMAGE --format enroot -o /shared/x.sqsh`",
            )
        made_from = f" made from {p.image.reference}" if p.image else ""
        return path, comment(f"Image: enroot squashfs {path}{made_from}")
    return (
        p.pinned.enroot,
        comment(f"Image: {p.pinned.reference} (IMAGE below: the same in enroot's form)"),
    )


def prepared(locked: Locked, opts: SlurmOptions) -> Prepared:
    """The recipe checked and its image resolved (none needed outside a container)."""
    if opts.image and opts.squashfs:
        raise ExportError("give either --image or --squashfs, not both")
    required = opts.container and not opts.squashfs
    return prepare(locked, opts.image, opts.dist_port, image_required=required)


def render_slurm(locked: Locked, opts: SlurmOptions | None = None) -> str:
    """The sbatch script text."""
    opts = opts or SlurmOptions()
    p = prepared(locked, opts)
    lines = [
        "#!/bin/bash",
        comment(p.header()),
        *([_container_image(p, opts)[1]] if opts.container else []),
        f"# {HF_TOKEN}, when the model needs one, comes from the environment sbatch runs in",
        "# (exported to the job, passed on by srun and pyxis); it is never written here.",
        *sbatch_line("job-name", opts.job_name or locked.name),
        *sbatch_line("nodes", p.nodes),
        *sbatch_line("ntasks-per-node", 1),
        *sbatch_line("gpus-per-node", p.gpus or None),
        "#SBATCH --exclusive",
        *sbatch_line("partition", opts.partition),
        *sbatch_line("account", opts.account),
        *sbatch_line("time", opts.time),
        "set -euo pipefail",
        "",
    ]
    return "\n".join(lines + server_steps(p, opts))


def server_steps(p: Prepared, opts: SlurmOptions, exec_server: bool = False) -> list[str]:
    """The lines that serve the recipe inside an allocation, after its #SBATCH header: its
    environment, image and Hub cache, the weights pre-fill and the server, each an srun step
    of one task per node (through pyxis unless `opts.container` is False). `repro campaign
    export slurm` runs every point through these lines too, the server's srun exec'd
    (`exec_server`) so that a signal to the script reaches it."""
    nodes = p.nodes
    lines = [f"export {k}={word(v)}" for k, v in p.env.items()]
    if opts.container:
        lines.append(f"IMAGE={word(_container_image(p, opts)[0])}")
        hub = word(opts.hub_cache) if opts.hub_cache else '"$HOME/.cache/huggingface"'
        lines.append(f"HUB_CACHE={hub}")
    if nodes > 1:
        lines += [
            "# The first host of the allocation is the rendezvous of --dist-init-addr.",
            'MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)"',
            "export MASTER_ADDR",
        ]
    lines.append("")
    if nodes > 1:
        lines.append("# Single quotes: each task expands $SLURM_NODEID itself (its node's index).")
    srun = [f"srun --nodes={nodes} --ntasks={nodes} --ntasks-per-node=1 \\"]
    if opts.container:
        srun += [
            '  --container-image="$IMAGE" \\',
            f'  --container-mounts="$HUB_CACHE:{HUB_CACHE_IN_CONTAINER}" \\',
            "  --no-container-mount-home \\",
        ]
    prefill = p.prefill_argv(opts.python)
    if prefill:
        lines += [
            "# The server runs with the Hub offline: first each node downloads the pinned files",
            "# into its Hub cache (files already there are kept).",
            *srun,
            f"  env {HUB_OFFLINE_ENV}=0 {' '.join(word(a) for a in prefill)}",
            "",
        ]
    server = [("exec " if exec_server else "") + srun[0], *srun[1:]]
    lines += [*server, f"  bash -c {word(_inner_command(p, opts))}", ""]
    return lines
