"""Real run records for the report tests: `repro bench` against the SGLang simulator.

Three runs, benched once per session (about 25 s):
- `demo-ar`: the demo model without a drafter (autoregressive baseline), c=1,4, 2 repeats;
- `demo-dflash`: the demo recipe (DFLASH drafter), c=1,4, 2 repeats, plus accept.json;
- `demo-dflash-c48`: the same deployment at c=4,8, 1 repeat (unmatched points, no spread).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.report.simbench import REPO, run_bench, start_simulator, write_accept

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
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = tmp_path_factory.mktemp("runs")
    recipes = root / "recipes"
    recipes.mkdir()
    with start_simulator(AR_ARGS, log=root / "sim-ar.log") as sim:
        ar = run_bench(_recipe(recipes, "demo-ar", 2, False), sim.url, root / "ar", "1,4")
    with start_simulator(DFLASH_ARGS, log=root / "sim-dflash.log") as sim:
        dflash = run_bench(
            _recipe(recipes, "demo-dflash", 2, True), sim.url, root / "dflash", "1,4"
        )
        write_accept(sim.url, dflash)
        c48 = run_bench(
            _recipe(recipes, "demo-dflash-c48", 1, True), sim.url, root / "dflash-c48", "4,8"
        )
    return Runs(ar=ar, dflash=dflash, dflash_c48=c48)
