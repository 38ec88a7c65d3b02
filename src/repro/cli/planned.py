"""Commands whose stage is planned but not built yet.

They are listed in `repro --help` so the shape of the tool is visible, and each one fails
with a clear message (exit code 3) instead of silently succeeding. A stage's real command
group replaces its entry here when it lands.
"""

from __future__ import annotations

import click

from repro.errors import NotBuiltYet

_PLANNED = {
    "recipe": "Recipes: list, show, render and check deployments.",
    "lock": "Pin a recipe's image, model and drafter revisions into a lock file.",
    "fetch": "Download model and drafter weights at the locked revisions.",
    "image": "Build, push, pull, verify and export pinned SGLang images.",
    "launch": "Start a recipe's server with Docker Compose and wait until it is healthy.",
    "doctor": "Check this machine (GPUs, topology, engine, disk) against a recipe.",
    "bench": "Sweep concurrency against a server and write a run record.",
    "accept": "Measure speculative acceptance length per prompt set.",
    "report": "Tables, comparisons and plots from run records.",
    "run": "Everything in one go: lock, image, fetch, doctor, launch, accept, bench, report.",
    "export": "Manifests for other clusters: Kubernetes LeaderWorkerSet, Slurm.",
}


def _planned_command(name: str, summary: str) -> click.Command:
    def callback(args: tuple[str, ...]) -> None:
        raise NotBuiltYet(
            f"`repro {name}` is not built in this version of repro.",
            hint="see the open issues for its status; `make demo` runs what exists today.",
        )

    return click.Command(
        name,
        callback=callback,
        params=[click.Argument(["args"], nargs=-1)],
        help=f"{summary} (not built yet)",
        short_help=f"{summary} (not built yet)",
        context_settings={"ignore_unknown_options": True},
    )


COMMANDS = [_planned_command(name, summary) for name, summary in _PLANNED.items()]
