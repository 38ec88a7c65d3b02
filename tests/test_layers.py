"""The stages' order, pyproject.toml's [tool.importlinter] contracts, holds for the tree (as
`make lint` checks), and an import running back up the order breaks it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint(src: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """import-linter on the `repro` package found in `src`, with the project's contracts."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [str(LINT_IMPORTS), "--no-cache", str(ROOT / "pyproject.toml")]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_tree_keeps_every_contract(tmp_path: Path) -> None:
    result = _lint(ROOT / "src", tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "back_up", "contract"),
    [
        ("hub/models.py", "import repro.lock", "schema <- recipe, hub <- lock <- image <- launch"),
        (
            "schema/lock.py",
            "import repro.recipe",
            "schema <- recipe, hub <- lock <- image <- launch",
        ),
        ("bench/metrics.py", "import repro.launch", "bench only talks HTTP"),
        ("report/table.py", "import repro.bench", "report reads records"),
        ("lock/io.py", "import repro.run", "no stage imports cli or run"),
        ("sim/config.py", "import pydantic", "sim imports nothing of repro"),
    ],
)
def test_an_import_back_up_the_order_is_refused(
    tmp_path: Path, module: str, back_up: str, contract: str
) -> None:
    src = tmp_path / "src"
    shutil.copytree(
        ROOT / "src" / "repro", src / "repro", ignore=shutil.ignore_patterns("__pycache__")
    )
    target = src / "repro" / module
    target.write_text(target.read_text() + f"\n{back_up}  # noqa\n")
    result = _lint(src, tmp_path)
    assert result.returncode != 0
    broken = [line for line in result.stdout.splitlines() if line.endswith("BROKEN")]
    assert [line for line in broken if line.startswith(contract)], result.stdout
    assert back_up.split()[-1] in result.stdout  # the report names the import
