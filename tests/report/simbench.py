"""Real run records for the report tests, measured against the SGLang simulator.

The `simulator` fixture runs `python -m repro.sim` (REPRO_SIM) on a free 127.0.0.1 port;
`run_bench` and `run_accept` run the real `repro bench` / `repro accept` commands against it.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from repro.cli import main

REPO = Path(__file__).resolve().parents[2]


REPRO_SIM = ("-m", "repro.sim")
"""How the report tests run the simulator (`simulator(args, NO_LOAD, module=REPRO_SIM)`): as
`repro sim serve` does, without the sglang shim's launcher."""
NO_LOAD = {"REPRO_SIM_LOAD_SECONDS": "0"}


def _repro(args: list[str]) -> None:
    """Run a `repro` command in this process (the real CLI, without another interpreter start)."""
    result = CliRunner().invoke(main, args)
    if result.exit_code != 0:
        raise RuntimeError(f"repro {' '.join(args)} failed ({result.exit_code}):\n{result.output}")


def run_bench(recipe: Path, url: str, out: Path, concurrency: str, prompts: int = 6) -> Path:
    """`repro bench RECIPE --url URL --output OUT` with a tiny sweep; returns the run folder."""
    _repro(
        [
            "bench",
            str(recipe),
            "--url",
            url,
            "--concurrency",
            concurrency,
            "--prompts",
            str(prompts),
            "--input-len",
            "32",
            "--output-len",
            "16",
            "--output",
            str(out),
        ]
    )
    return out


def run_accept(recipe: Path, url: str, out: Path) -> None:
    """`repro accept RECIPE --url URL --output OUT`: accept.json into the bench run `out`."""
    _repro(
        [
            "accept",
            str(recipe),
            "--url",
            url,
            "--prompts",
            "chat,code",
            "-n",
            "3",
            "--max-new-tokens",
            "32",
            "--output",
            str(out),
        ]
    )
