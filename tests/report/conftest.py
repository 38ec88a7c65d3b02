"""Real run records for the report tests: `repro bench` against the SGLang simulator.

Three runs, benched once per session, each against its own simulator process:
- `demo-ar`: the demo model without a drafter (autoregressive baseline), c=1,4, 2 repeats;
- `demo-dflash`: the demo recipe (DFLASH drafter), c=1,4, 2 repeats, plus `repro accept`;
- `demo-dflash-c48`: the same deployment at c=4,8, 1 repeat (unmatched points, no spread).
"""

from __future__ import annotations

import re
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.report.simbench import NO_LOAD, REPO, REPRO_SIM, run_accept, run_bench
from tests.support.simulator import Simulators

AR_ARGS = ["--model-path", "repro-sim/tiny-chat"]
DFLASH_ARGS = [
    *AR_ARGS,
    "--speculative-algorithm",
    "DFLASH",
    "--speculative-draft-model-path",
    "repro-sim/tiny-chat-dflash",
    "--speculative-num-draft-tokens",
    "8",
]


def _recipe(dest: Path, name: str, repeats: int, drafter: bool) -> Path:
    text = (REPO / "recipes" / "demo.yaml").read_text()
    text = text.replace("repeats: 1", f"repeats: {repeats}")
    if not drafter:
        text = re.sub(r"\ndrafter:\n(  .*\n)+", "\n", text)
        text = re.sub(r"\nspeculative:\n(  .*\n)+", "\n", text)
    path = dest / f"{name}.yaml"
    path.write_text(text)
    return path


@dataclass
class Runs:
    ar: Path
    dflash: Path
    dflash_c48: Path


@pytest.fixture(scope="session")
def runs(simulator: Simulators, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = tmp_path_factory.mktemp("runs")
    recipes = root / "recipes"
    recipes.mkdir()
    plan = [  # (name, simulator args, repeats, drafter, concurrencies)
        ("demo-ar", AR_ARGS, 2, False, "1,4"),
        ("demo-dflash", DFLASH_ARGS, 2, True, "1,4"),
        ("demo-dflash-c48", DFLASH_ARGS, 1, True, "4,8"),
    ]
    with ExitStack() as stack:
        sims = [simulator(p[1], NO_LOAD, wait=False, module=REPRO_SIM) for p in plan]
        for sim in sims:
            stack.callback(sim.stop)
            sim.wait_ready()

        paths = []
        for (name, _, repeats, drafter, conc), sim in zip(plan, sims, strict=True):
            recipe = _recipe(recipes, name, repeats, drafter)
            paths.append(run_bench(recipe, sim.url, root / name, conc))
            if drafter and repeats > 1:
                run_accept(recipe, sim.url, root / name)
        ar, dflash, c48 = paths
    return Runs(ar=ar, dflash=dflash, dflash_c48=c48)
